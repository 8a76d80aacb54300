import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { createStack, type SynthOptions } from './synth-stack.ts';

/** Synthesizes with AwsSolutionsChecks, as `cdk synth` does: any finding fails the synth. */
function synthWithNag(synth: SynthOptions = {}) {
  const { app, stack } = createStack(synth);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { synth: () => app.synth({ force: true }), stack };
}

function acknowledgements(stack: ReturnType<typeof createStack>['stack']) {
  return stack.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) => Object.entries(entry.data as Record<string, string>))
      .map(([id, reason]) => ({ path: construct.node.path, id, reason })),
  );
}

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing unacknowledged in token mode', () => {
    const { synth } = synthWithNag();
    expect(synth).not.toThrow();
  });

  it('finds nothing unacknowledged in IAM mode with an alarm e-mail', () => {
    const { synth } = synthWithNag({
      context: { authMode: 'iam', alarmEmail: 'oncall@example.com' },
    });
    expect(synth).not.toThrow();
  });

  it('finds nothing unacknowledged with the Kubernetes projector deployed', () => {
    const { synth } = synthWithNag({
      context: {
        projectorClusterName: 'prod',
        projectorEndpoint: 'https://ABC123.gr7.eu-west-1.eks.amazonaws.com',
        projectorCertificateAuthority: 'LS0tLS1CRUdJTg==',
      },
    });
    expect(synth).not.toThrow();
  });

  it('acknowledges each finding on the construct it concerns, with a reason', () => {
    const { stack } = synthWithNag();
    const acks = acknowledgements(stack);
    expect(acks.length).toBeGreaterThan(0);
    for (const ack of acks) {
      // A stack-wide acknowledgement would hide the next finding of the same rule.
      expect(ack.path, ack.id).not.toBe(stack.node.path);
      expect(ack.reason.length, `${ack.path} ${ack.id}`).toBeGreaterThan(60);
    }
  });

  function acknowledgedRules(synth: SynthOptions = {}): string[] {
    const { stack } = synthWithNag(synth);
    const rules = new Set(
      acknowledgements(stack).map((ack) =>
        ack.id.replace(/^Annotation::/, '').replace(/\[.*$/, ''),
      ),
    );
    return [...rules].sort();
  }

  it('acknowledges only the rules a reviewer has agreed to', () => {
    // SQS3: the EC2 rule's dead-letter queue has no queue behind it (an alarm watches it).
    // APIG1: no access logs unless the account has API Gateway's logs role (stack option).
    expect(acknowledgedRules()).toEqual([
      'AwsSolutions-APIG1',
      'AwsSolutions-APIG4',
      'AwsSolutions-IAM5',
      'AwsSolutions-L1',
      'AwsSolutions-SQS3',
    ]);
  });

  it('needs no access-log acknowledgement once the stack sets the logs role', () => {
    const { synth } = synthWithNag({ context: { apiGatewayLogsRole: 'true' } });
    expect(synth).not.toThrow();
    // IAM4: the account logs role uses the AWS-managed policy AWS documents for it.
    expect(acknowledgedRules({ context: { apiGatewayLogsRole: 'true' } })).toEqual([
      'AwsSolutions-APIG4',
      'AwsSolutions-IAM4',
      'AwsSolutions-IAM5',
      'AwsSolutions-L1',
      'AwsSolutions-SQS3',
    ]);
  });
});
