import { Duration } from 'aws-cdk-lib';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { Function as RegistrarLambda } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import type { StackOptions } from '../stack-options.ts';
import { RegistrarFunction } from './registrar-function.ts';
import { registrarEnvironment } from './registrar-functions.ts';
import type { RegistryTable } from './registry-table.ts';
import { tableAccess } from './table-access.ts';

export interface InstanceStateRuleProps {
  registry: RegistryTable;
  options: StackOptions;
}

/**
 * EC2 knows first: an EventBridge rule on the account's EC2 instance state-change
 * notifications (only the states the `ec2States` option names) runs a function that removes
 * the instance's entries at once, without the grace period and never held by fail static.
 * The function may only query the instance index (keys) and delete entries.
 */
export class InstanceStateRule extends Construct {
  readonly function: RegistrarLambda;
  readonly rule: Rule;

  constructor(scope: Construct, id: string, props: InstanceStateRuleProps) {
    super(scope, id);
    this.function = new RegistrarFunction(this, 'Function', {
      name: 'ec2StateChange',
      environment: registrarEnvironment(props.registry, props.options),
    }).function;
    props.registry.grantAccess(
      this.function,
      tableAccess('ec2StateChange', props.options.authMode),
    );
    this.rule = new Rule(this, 'Rule', {
      description: 'Removes the WorkloadEntries of EC2 instances that shut down or terminate',
      eventPattern: {
        source: ['aws.ec2'],
        detailType: ['EC2 Instance State-change Notification'],
        detail: { state: [...props.options.ec2States] },
      },
      // A failed removal is retried; a repeat finds nothing left to remove. An event older
      // than an hour is moot: the sweeper has removed the entry after its grace period.
      targets: [
        new LambdaFunction(this.function, { retryAttempts: 3, maxEventAge: Duration.hours(1) }),
      ],
    });
  }
}
