import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '../../lib/config.ts';
import { createStack, synthTemplate } from './synth-stack.ts';

/**
 * `cdk synth -c heartbeatLanes=N`: lanes 1 .. N-1 are the sweeper function invoked each tick
 * with `{"heartbeatLane": k}` (lib/sweep/heartbeat-lane-run.ts), five targets to a rule
 * (EventBridge's limit), with the permission that lets each rule invoke it; the sweep's own rule
 * is unchanged.
 */
const SWEEPER = Match.stringLikeRegexp('^SweepSweeperFunction');

function laneRules(template: Template) {
  const rules = template.findResources('AWS::Events::Rule');
  return Object.entries(rules).filter(([id]) => id.includes('HeartbeatLanes'));
}

/** Each lane target's input, its fire time filled in as EventBridge does (`<time>` here). */
function laneInputs(template: Template): number[] {
  return laneRules(template)
    .flatMap(
      ([, rule]) =>
        rule.Properties.Targets as {
          InputTransformer?: { InputTemplate: string; InputPathsMap: Record<string, string> };
        }[],
    )
    .map(
      (target) =>
        (
          JSON.parse(
            (target.InputTransformer?.InputTemplate ?? '{}').replace('<time>', '"<time>"'),
          ) as { heartbeatLane: number }
        ).heartbeatLane,
    )
    .sort((a, b) => a - b);
}

describe('heartbeat lanes in the stack', () => {
  let three: Template;
  beforeAll(() => {
    three = synthTemplate({ context: { heartbeatLanes: '3' } });
  });

  it('adds no rule with the default of one lane', () => {
    const template = synthTemplate();
    expect(laneRules(template)).toEqual([]);
    template.resourceCountIs('AWS::Events::Rule', 1 + instanceStateRules(template));
  });

  it('invokes the sweeper for lanes 1 and 2 each minute, naming the lane, with no retry', () => {
    expect(laneInputs(three)).toEqual([1, 2]);
    three.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: Match.arrayWith([
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [SWEEPER, 'Arn'] },
          // The rule's fire time rides along: a lane delivered late picks its tick's plan.
          InputTransformer: {
            InputPathsMap: { time: '$.time' },
            InputTemplate: '{"heartbeatLane":1,"time":<time>}',
          },
          RetryPolicy: { MaximumRetryAttempts: 0 },
        }),
      ]),
    });
    // The sweep's own rule still has its one target, with no input.
    three.hasResourceProperties('AWS::Events::Rule', {
      Description: Match.stringLikeRegexp('deletes disconnected and stale entries'),
      Targets: [
        Match.objectLike({ Arn: { 'Fn::GetAtt': [SWEEPER, 'Arn'] }, Input: Match.absent() }),
      ],
    });
  });

  it('lets the lanes rule invoke the sweeper, and tells the sweeper how many lanes run', () => {
    const [[ruleId]] = laneRules(three) as [[string, unknown]];
    three.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      FunctionName: { 'Fn::GetAtt': [SWEEPER, 'Arn'] },
      Principal: 'events.amazonaws.com',
      SourceArn: { 'Fn::GetAtt': [ruleId, 'Arn'] },
    });
    three.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [ENV.heartbeatLanes]: '3' }) },
    });
  });

  it('puts five lanes on a rule: 12 lanes make rules of 5, 5 and 1', () => {
    const template = synthTemplate({ context: { heartbeatLanes: '12' } });
    const sizes = laneRules(template).map(([, rule]) => (rule.Properties.Targets as []).length);
    expect(sizes.sort()).toEqual([1, 5, 5]);
    expect(laneInputs(template)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it.each([
    ['0', /heartbeatLanes \(value '0'\): must be a whole number from 1 to 16/],
    ['17', /heartbeatLanes \(value '17'\): must be a whole number from 1 to 16/],
    ['2.5', /heartbeatLanes \(value '2.5'\): must be a whole number from 1 to 16/],
    ['many', /heartbeatLanes \(value 'many'\): must be a whole number from 1 to 16/],
  ])('refuses heartbeatLanes=%s at synth, naming the option and the value', (value, message) => {
    expect(() => createStack({ context: { heartbeatLanes: value } })).toThrow(message);
  });
});

/** The EC2 state-change rule(s) the stack always has, so the count above is of the sweep's. */
function instanceStateRules(template: Template): number {
  const rules = template.findResources('AWS::Events::Rule');
  return Object.keys(rules).filter((id) => !id.startsWith('Sweep')).length;
}
