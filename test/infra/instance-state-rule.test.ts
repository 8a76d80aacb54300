import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { synthTemplate } from './synth-stack.ts';

const QUEUE_ARN = { 'Fn::GetAtt': [Match.stringLikeRegexp('^InstanceStateDeadLetters'), 'Arn'] };

describe('EC2 state-change rule: no event dropped silently', () => {
  let template: Template;
  beforeAll(() => {
    template = synthTemplate();
  });

  it('sends an event EventBridge could not deliver to the dead-letter queue', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.objectLike({ source: ['aws.ec2'] }),
      Targets: [
        Match.objectLike({
          DeadLetterConfig: { Arn: QUEUE_ARN },
          RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 },
        }),
      ],
    });
  });

  it('sends an event the function failed (after its two retries) to the same queue', () => {
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: Match.stringLikeRegexp('^InstanceStateFunction') },
      MaximumRetryAttempts: 2,
      MaximumEventAgeInSeconds: 3600,
      DestinationConfig: { OnFailure: { Destination: QUEUE_ARN } },
    });
  });

  it('refuses writes without TLS; EventBridge may write for this rule only, the function role may send', () => {
    const [policy] = Object.values(template.findResources('AWS::SQS::QueuePolicy'));
    const statements = policy?.Properties.PolicyDocument.Statement as {
      Effect: string;
      Principal: unknown;
      Condition?: Record<string, Record<string, unknown>>;
    }[];
    expect(
      statements.some(
        (s) => s.Effect === 'Deny' && s.Condition?.Bool?.['aws:SecureTransport'] === 'false',
      ),
    ).toBe(true);
    const fromEvents = statements.find(
      (s) => JSON.stringify(s.Principal) === JSON.stringify({ Service: 'events.amazonaws.com' }),
    );
    expect(fromEvents?.Condition?.ArnEquals?.['aws:SourceArn']).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^InstanceStateRule/), 'Arn'],
    });
    const role = Object.entries(template.findResources('AWS::IAM::Policy')).find(([id]) =>
      id.startsWith('InstanceStateFunctionRole'),
    )?.[1];
    expect(JSON.stringify(role?.Properties.PolicyDocument)).toContain('sqs:SendMessage');
  });

  it('encrypts the queue and keeps messages two weeks to read them', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 24 * 3600,
    });
  });
});
