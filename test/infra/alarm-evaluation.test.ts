import { describe, expect, it } from 'vitest';
import { synthVariant, TEMPLATE_VARIANTS } from '../../scripts/template-variants.ts';

/**
 * Every alarm of every stack variant, evaluated against what would make it fire and what must
 * not. CloudWatch cannot run here: `evaluate` is a stand-in for its documented evaluation (the
 * last EvaluationPeriods datapoints, DatapointsToAlarm of them breaching, missing data treated
 * as TreatMissingData says), applied to the alarm exactly as synthesized: its threshold, its
 * comparison, its metric math expression.
 */

type Resource = { Type: string; Properties: Record<string, unknown> };
type MetricQuery = { Id: string; Expression?: string; ReturnData?: boolean };

/** One evaluation period: a plain value, a value per metric id (math), or a value and its band. */
type Period =
  | number
  | undefined
  | Record<string, number | undefined>
  | { value: number; upper: number };

interface Scenario {
  why: string;
  periods: Period[];
}

interface AlarmScenarios {
  fires: Scenario[];
  quiet: Scenario[];
}

function alarmsOf(template: { Resources: Record<string, Resource> }): [string, Resource][] {
  return Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm');
}

/** The value of the alarm's returned expression, `FILL(x, n)` and `+`/`-` of metric ids. */
function evaluateExpression(
  expression: string,
  values: Record<string, number | undefined>,
): number | undefined {
  const code = expression.replace(/FILL\((\w+),\s*(-?\d+(?:\.\d+)?)\)/g, '($1 ?? $2)');
  if (!/^[\w\s()+\-?.]*$/.test(code)) throw new Error(`unsupported expression: ${expression}`);
  const ids = Object.keys(values);
  const result = new Function(...ids, `return ${code};`)(...ids.map((id) => values[id]));
  return typeof result === 'number' && Number.isFinite(result) ? result : undefined;
}

function breaches(alarm: Record<string, unknown>, period: Period): boolean | undefined {
  const comparison = alarm.ComparisonOperator as string;
  if (comparison === 'GreaterThanUpperThreshold') {
    if (period === undefined || typeof period !== 'object' || !('upper' in period))
      return undefined;
    return Number(period.value) > Number(period.upper);
  }
  const queries = (alarm.Metrics as MetricQuery[] | undefined) ?? [];
  const returned = queries.find((q) => q.ReturnData !== false && q.Expression);
  let value: number | undefined;
  if (returned?.Expression) {
    value = evaluateExpression(
      returned.Expression,
      (period ?? {}) as Record<string, number | undefined>,
    );
  } else {
    value = period as number | undefined;
  }
  if (value === undefined) return undefined;
  const threshold = Number(alarm.Threshold);
  switch (comparison) {
    case 'GreaterThanOrEqualToThreshold':
      return value >= threshold;
    case 'GreaterThanThreshold':
      return value > threshold;
    case 'LessThanThreshold':
      return value < threshold;
    case 'LessThanOrEqualToThreshold':
      return value <= threshold;
    default:
      throw new Error(`unsupported comparison ${comparison}`);
  }
}

/** CloudWatch's evaluation of the newest EvaluationPeriods periods (stand-in, see above). */
function evaluate(
  alarm: Record<string, unknown>,
  periods: Period[],
): 'ALARM' | 'OK' | 'INSUFFICIENT_DATA' {
  const evaluationPeriods = Number(alarm.EvaluationPeriods);
  const datapointsToAlarm = Number(alarm.DatapointsToAlarm ?? evaluationPeriods);
  const missing = (alarm.TreatMissingData as string | undefined) ?? 'missing';
  const recent = periods.slice(-evaluationPeriods).map((p) => breaches(alarm, p));
  const counted = recent.map(
    (b) => b ?? (missing === 'breaching' ? true : missing === 'notBreaching' ? false : undefined),
  );
  if (counted.every((b) => b === undefined)) return 'INSUFFICIENT_DATA';
  return counted.filter((b) => b === true).length >= datapointsToAlarm ? 'ALARM' : 'OK';
}

const lambdaErrors: AlarmScenarios = {
  fires: [{ why: 'one crash or timeout', periods: [1] }],
  quiet: [
    { why: 'no errors', periods: [0] },
    { why: 'no invocations at all', periods: [undefined] },
  ],
};

/** Scenarios by alarm logical ID prefix. An alarm without scenarios fails the test. */
const SCENARIOS: Record<string, AlarmScenarios> = {
  MonitoringRegistrarFaults: {
    fires: [{ why: '3 faults in 5 minutes', periods: [3] }],
    quiet: [
      { why: '2 faults (each already retried by the SDK)', periods: [2] },
      { why: 'no traffic', periods: [undefined] },
    ],
  },
  MonitoringRefusalSpike: {
    fires: [
      {
        why: 'refusals above the band for 15 minutes',
        periods: [
          { value: 90, upper: 20 },
          { value: 95, upper: 20 },
          { value: 80, upper: 20 },
        ],
      },
    ],
    quiet: [
      {
        why: "one client's burst of bad tokens, then back to normal",
        periods: [
          { value: 500, upper: 20 },
          { value: 400, upper: 20 },
          { value: 3, upper: 20 },
        ],
      },
    ],
  },
  MonitoringAuthorizeErrors: {
    fires: [
      { why: 'one crash beside 10 refused tokens', periods: [{ errors: 11, refusedTokens: 10 }] },
      {
        why: 'a crash with no refusal counted',
        periods: [{ errors: 1, refusedTokens: undefined }],
      },
    ],
    quiet: [
      {
        why: '500 refused tokens (each a thrown Unauthorized)',
        periods: [{ errors: 500, refusedTokens: 500 }],
      },
      { why: 'no connects', periods: [{ errors: undefined, refusedTokens: undefined }] },
    ],
  },
  MonitoringAuthorizeThrottles: lambdaErrors,
  MonitoringConnectErrors: lambdaErrors,
  MonitoringConnectThrottles: lambdaErrors,
  MonitoringDisconnectErrors: lambdaErrors,
  MonitoringDisconnectThrottles: lambdaErrors,
  MonitoringMessageErrors: lambdaErrors,
  MonitoringMessageThrottles: lambdaErrors,
  MonitoringEc2StateChangeErrors: lambdaErrors,
  MonitoringEc2StateChangeThrottles: lambdaErrors,
  MonitoringSweeperErrors: lambdaErrors,
  MonitoringRolloutErrors: lambdaErrors,
  MonitoringRolloutThrottles: lambdaErrors,
  MonitoringSweeperMissedRuns: {
    fires: [
      { why: 'every tick throttled (no invocations: missing data)', periods: [undefined] },
      { why: 'throttled: 2 of 5 ticks ran', periods: [2] },
      { why: 'the schedule disabled', periods: [0] },
    ],
    quiet: [
      { why: 'every tick ran', periods: [5] },
      {
        why: 'a late tick found the previous run holding the lease and skipped (still an invocation)',
        periods: [5],
      },
      { why: "a tick fell into the next period's count", periods: [4] },
    ],
  },
  MonitoringConnectExecutionErrors: {
    fires: [{ why: '5 failed $connect integrations', periods: [5] }],
    quiet: [{ why: '4 (an agent retries)', periods: [4] }],
  },
  MonitoringInstanceEventDeadLetters: {
    fires: [{ why: 'one EC2 event in the dead-letter queue', periods: [1] }],
    quiet: [
      { why: 'queue empty', periods: [0] },
      { why: 'no datapoint', periods: [undefined] },
    ],
  },
  MonitoringSweepFallingBehind: {
    fires: [
      {
        why: 'every run for 15 minutes stopped at its deadline',
        periods: [
          { stopped: 5, unknown: 0 },
          { stopped: 5, unknown: 0 },
          { stopped: 4, unknown: 0 },
        ],
      },
      {
        why: 'API Gateway denies the checks (AccessDenied)',
        periods: [
          { stopped: 0, unknown: 900 },
          { stopped: 0, unknown: 880 },
          { stopped: 0, unknown: 910 },
        ],
      },
    ],
    quiet: [
      {
        why: 'one run cut short by a mass expiry, then caught up',
        periods: [
          { stopped: 1, unknown: 0 },
          { stopped: 0, unknown: 0 },
          { stopped: 0, unknown: 0 },
        ],
      },
      {
        why: 'no run emitted (the missed-runs alarm covers that)',
        periods: [
          { stopped: undefined, unknown: undefined },
          { stopped: undefined, unknown: undefined },
          { stopped: undefined, unknown: undefined },
        ],
      },
    ],
  },
  MonitoringSweepHeld: {
    fires: [
      { why: 'deletions held', periods: [{ held: 4, expired: undefined }] },
      { why: 'deleted past the hold bound', periods: [{ held: undefined, expired: 2 }] },
    ],
    quiet: [{ why: 'nothing held', periods: [{ held: undefined, expired: undefined }] }],
  },
  ProjectorDeadLettersAlarm: {
    fires: [{ why: 'one batch parked', periods: [1] }],
    quiet: [{ why: 'queue empty', periods: [0] }],
  },
  ProjectorFunctionErrorsAlarm: lambdaErrors,
  ProjectorErrorsAlarm: lambdaErrors,
  MeshIdentityErrorsAlarm: lambdaErrors,
};

function scenariosFor(logicalId: string): AlarmScenarios | undefined {
  const prefix = Object.keys(SCENARIOS)
    .filter((p) => logicalId.startsWith(p))
    .sort((a, b) => b.length - a.length)[0];
  return prefix ? SCENARIOS[prefix] : undefined;
}

describe.each(TEMPLATE_VARIANTS.map((v) => [v.name, v] as const))(
  'alarms of the %s variant',
  (_name, variant) => {
    const template = synthVariant(variant) as { Resources: Record<string, Resource> };
    const alarms = alarmsOf(template);

    it('each has a firing and a quiet case below, and its recovery is notified', () => {
      expect(alarms.length).toBeGreaterThan(10);
      for (const [id, alarm] of alarms) {
        expect(scenariosFor(id), id).toBeDefined();
        expect(alarm.Properties.OKActions, id).toEqual(alarm.Properties.AlarmActions);
      }
    });

    it.each(alarms.map(([id, alarm]) => [id, alarm] as const))(
      '%s fires and stays quiet as intended',
      (id, alarm) => {
        const scenarios = scenariosFor(id);
        for (const scenario of scenarios?.fires ?? []) {
          expect(
            evaluate(alarm.Properties, scenario.periods),
            `${id} should fire: ${scenario.why}`,
          ).toBe('ALARM');
        }
        for (const scenario of scenarios?.quiet ?? []) {
          expect(
            evaluate(alarm.Properties, scenario.periods),
            `${id} should stay quiet: ${scenario.why}`,
          ).not.toBe('ALARM');
        }
      },
    );
  },
);
