import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '../../lib/config.ts';
import { synthTemplate } from './synth-stack.ts';

const SWEEPER = Match.stringLikeRegexp('^SweepSweeperFunction');

function sweeperFunction(template: Template) {
  const functions = template.findResources('AWS::Lambda::Function');
  const entry = Object.entries(functions).find(([id]) => id.startsWith('SweepSweeperFunction'));
  if (!entry) throw new Error('no sweeper function');
  return entry[1].Properties;
}

describe('sweeper schedule', () => {
  let template: Template;
  beforeAll(() => {
    template = synthTemplate();
  });

  it('runs the sweeper every minute by default', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [SWEEPER, 'Arn'] } })],
    });
  });

  it('runs at the configured sweep rate', () => {
    const template = synthTemplate({ context: { sweepRate: '5m' } });
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(5 minutes)' });
  });

  it('reserves no concurrency, so a deploy fits an account at the default limit of 10', () => {
    // One sweep at a time is a DynamoDB lease (test/integration/sweep-lease.test.ts): Lambda
    // refuses a reservation that leaves fewer than 10 unreserved executions.
    const reserved = template.findResources('AWS::Lambda::Function', {
      Properties: { ReservedConcurrentExecutions: Match.anyValue() },
    });
    expect(Object.keys(reserved)).toEqual([]);
    expect(sweeperFunction(template).ReservedConcurrentExecutions).toBeUndefined();
  });

  it('ends a run before the next tick, with deletes sized to fit: 50/s x 40 s', () => {
    const sweeper = sweeperFunction(template);
    expect(sweeper.Timeout).toBe(50);
    // One vCPU (1,769 MB): the run's CPU at 100,000 VMs, sized by `npm run bench -- scale`.
    expect(sweeper.MemorySize).toBe(1_769);
    expect(sweeper.Environment.Variables[ENV.sweepMaxDeletes]).toBe('2000');
  });

  it('does not retry a failed tick: the next tick is the retry', () => {
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: SWEEPER },
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 60,
    });
  });
});
