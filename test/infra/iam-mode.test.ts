import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '../../lib/config.ts';
import { synthTemplate } from './synth-stack.ts';

describe('IAM auth mode', () => {
  let template: Template;
  beforeAll(() => {
    template = synthTemplate({ context: { authMode: 'iam' } });
  });

  it('authorizes $connect with IAM (SigV4) instead of the token authorizer', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
      RouteKey: '$connect',
      AuthorizationType: 'AWS_IAM',
    });
    template.resourceCountIs('AWS::ApiGatewayV2::Authorizer', 0);
  });

  it('deploys no authorize function', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions).some((id) => id.includes('Authorize'))).toBe(false);
    expect(Object.keys(functions)).toHaveLength(5);
  });

  it('tells the functions to check the caller against the stored IAM policies', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [ENV.authMode]: 'iam' }) },
    });
  });

  it('outputs the $connect ARN the instance role must be allowed to invoke', () => {
    template.hasOutput('ConnectRouteArn', {
      Value: { 'Fn::Join': ['', Match.arrayWith([Match.stringLikeRegexp('/v1/\\$connect$')])] },
    });
  });
});
