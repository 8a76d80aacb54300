import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import { CfnAccount } from 'aws-cdk-lib/aws-apigateway';
import { ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';

/**
 * API Gateway writes WebSocket access logs only when the account (per region) names a
 * CloudWatch Logs role. A fresh account has none, and the stage then fails to deploy with
 * "CloudWatch Logs role ARN must be set in account settings". This sets it, so a first
 * `cdk deploy` works; the `apiGatewayLogsRole=false` option skips it when the account already
 * has one.
 */
export class ApiGatewayLogsRole extends Construct {
  readonly account: CfnAccount;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('apigateway.amazonaws.com'),
      description: 'Lets API Gateway write access and execution logs to CloudWatch Logs',
      managedPolicies: [
        ManagedPolicy.fromAwsManagedPolicyName('service-role/AmazonAPIGatewayPushToCloudWatchLogs'),
      ],
    });
    // The setting is account-wide: other APIs in the account log through this role once it is
    // set. Deleting it with this stack would silently break their logging, so it stays.
    role.applyRemovalPolicy(RemovalPolicy.RETAIN);
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      reason:
        "This is API Gateway's account-wide logging role: it writes the log groups of every API in the account and region, so no narrower resource exists; AWS documents this managed policy for it.",
    });
    this.account = new CfnAccount(this, 'Account', { cloudWatchRoleArn: role.roleArn });
    this.account.applyRemovalPolicy(RemovalPolicy.RETAIN);
  }
}
