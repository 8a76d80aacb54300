import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { FAULT_THRESHOLD } from '../../infra/constructs/monitoring.ts';
import { METRIC, METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.ts';
import { synthTemplate } from './synth-stack.ts';

const TOPIC = { Ref: Match.stringLikeRegexp('^MonitoringAlarmTopic') };

describe('alarms and dashboard', () => {
  let template: Template;
  beforeAll(() => {
    template = synthTemplate();
  });

  it('pages on faults the functions counted, under the metric name the code emits', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: [
        Match.objectLike({
          MetricStat: {
            Metric: {
              Namespace: METRICS_NAMESPACE,
              MetricName: METRIC.faults,
              Dimensions: [{ Name: 'service', Value: SERVICE_NAME }],
            },
            Period: 300,
            Stat: 'Sum',
          },
        }),
      ],
      Threshold: FAULT_THRESHOLD,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [TOPIC],
    });
  });

  it('has no static alarm on refusals: a stranger with a bad token cannot page', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    const onRefusals = alarms.filter((alarm) =>
      JSON.stringify(alarm.Properties).includes(`"MetricName":"${METRIC.refused}"`),
    );
    // Only two read it: the anomaly band of the refusal spike, and the authorizer alarm that
    // subtracts refused tokens from its Lambda errors.
    expect(onRefusals.map((a) => a.Properties.ComparisonOperator).sort()).toEqual([
      'GreaterThanOrEqualToThreshold',
      'GreaterThanUpperThreshold',
    ]);
  });

  it('alarms on a sustained refusal spike against an anomaly band', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ComparisonOperator: 'GreaterThanUpperThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      ThresholdMetricId: Match.anyValue(),
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: Match.stringLikeRegexp('^ANOMALY_DETECTION_BAND') }),
        Match.objectLike({
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({
              Namespace: METRICS_NAMESPACE,
              MetricName: METRIC.refused,
              Dimensions: [{ Name: 'service', Value: SERVICE_NAME }],
            }),
          }),
        }),
      ]),
      AlarmActions: [TOPIC],
    });
  });

  it('alarms on authorizer errors minus the tokens it refused (its 401 is a thrown error)', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: 1,
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'errors - FILL(refusedTokens, 0)', ReturnData: true }),
        Match.objectLike({
          Id: 'errors',
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({
              Namespace: 'AWS/Lambda',
              MetricName: 'Errors',
              Dimensions: [
                {
                  Name: 'FunctionName',
                  Value: { Ref: Match.stringLikeRegexp('^FunctionsAuthorize') },
                },
              ],
            }),
          }),
        }),
        Match.objectLike({
          Id: 'refusedTokens',
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({
              Namespace: METRICS_NAMESPACE,
              MetricName: METRIC.refused,
              Dimensions: Match.arrayWith([{ Name: 'Reason', Value: 'Unauthenticated' }]),
            }),
          }),
        }),
      ]),
      AlarmActions: [TOPIC],
    });
  });

  it.each(['Connect', 'Disconnect', 'Message', 'Sweep'])(
    'alarms on any Lambda error of the %s function (its refusals are responses, not errors)',
    (name) => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [
          { Name: 'FunctionName', Value: { Ref: Match.stringLikeRegexp(`^(Functions)?${name}`) } },
        ],
        Threshold: 1,
        AlarmActions: [TOPIC],
      });
    },
  );

  it('alarms when fewer than half the sweeper ticks of 5 minutes ran, counting no data as missed', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      Dimensions: [
        { Name: 'FunctionName', Value: { Ref: Match.stringLikeRegexp('^SweepSweeper') } },
      ],
      Period: 300,
      Threshold: 3,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
  });

  it('has no throttle alarm for the sweeper: its missed runs are what matters', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    const sweeperThrottles = alarms.filter(
      (alarm) =>
        alarm.Properties.MetricName === 'Throttles' &&
        JSON.stringify(alarm.Properties.Dimensions).includes('SweepSweeper'),
    );
    expect(sweeperThrottles).toEqual([]);
  });

  it('widens the missed-run window to three ticks of a slower schedule', () => {
    const template = synthTemplate({ context: { sweepRate: '10m' } });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Invocations',
      Period: 1800,
      Threshold: 2,
    });
  });

  it('alarms on 5 $connect execution errors in 5 minutes', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: [
        Match.objectLike({
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({
              Namespace: 'AWS/ApiGateway',
              MetricName: 'ExecutionError',
              Dimensions: Match.arrayWith([{ Name: 'Route', Value: '$connect' }]),
            }),
            Stat: 'Sum',
          }),
        }),
      ],
      Threshold: 5,
    });
  });

  it('alarms when the sweeper holds deletions or resumed them past the hold bound', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmDescription: Match.stringLikeRegexp('sweeper is holding deletions'),
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'FILL(held, 0) + FILL(expired, 0)' }),
        Match.objectLike({
          Id: 'held',
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({ MetricName: 'SweepHeld', Namespace: 'WorkloadRegistrar' }),
          }),
        }),
        Match.objectLike({
          Id: 'expired',
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({ MetricName: 'SweepHoldExpired' }),
          }),
        }),
      ]),
    });
  });

  it('alarms on the first EC2 state-change event in the dead-letter queue', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [
        {
          Name: 'QueueName',
          Value: {
            'Fn::GetAtt': [Match.stringLikeRegexp('^InstanceStateDeadLetters'), 'QueueName'],
          },
        },
      ],
      Statistic: 'Maximum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [TOPIC],
      OKActions: [TOPIC],
    });
  });

  it('shows held and slowed deletions by zone on the dashboard', () => {
    const body = JSON.stringify(template.findResources('AWS::CloudWatch::Dashboard'));
    expect(body).toMatch(/SELECT SUM\(SweepHeld\) FROM SCHEMA\([^)]*Zone, service\) GROUP BY Zone/);
    expect(body).toMatch(
      /SELECT SUM\(SweepSlowed\) FROM SCHEMA\([^)]*Zone, service\) GROUP BY Zone/,
    );
  });

  it('shows the cells slowed and held by zone, the word sweep status shows, as a gauge', () => {
    const body = JSON.stringify(template.findResources('AWS::CloudWatch::Dashboard'));
    for (const metric of ['SweepCellsSlowed', 'SweepCellsHeld']) {
      expect(body).toMatch(
        new RegExp(`SELECT MAX\\(${metric}\\) FROM SCHEMA\\([^)]*Zone, service\\) GROUP BY Zone`),
      );
    }
  });

  it('sends every alarm, and its recovery, to the alarm topic', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    // faults + refusal spike + 7 functions' errors + 6 functions' throttles (not the
    // sweeper's) + missed sweeps + $connect + EC2 dead letters + sweep falling behind + held
    expect(alarms.length).toBe(1 + 1 + 7 + 6 + 1 + 1 + 1 + 1 + 1);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([expect.objectContaining(TOPIC_SHAPE)]);
      expect(alarm.Properties.OKActions).toEqual([expect.objectContaining(TOPIC_SHAPE)]);
    }
  });

  it('subscribes no one to the topic without an alarm e-mail', () => {
    template.resourceCountIs('AWS::SNS::Subscription', 0);
  });

  it('subscribes the alarm e-mail to the topic', () => {
    const template = synthTemplate({ context: { alarmEmail: 'oncall@example.com' } });
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
      TopicArn: TOPIC,
    });
  });

  it('builds a dashboard of registrations, disconnects, sweeps, health transitions and errors', () => {
    const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);
    for (const title of [
      'Registrations',
      'Disconnects',
      'Sweeps',
      'Health transitions',
      'Faults by reason',
      'Refusals by reason',
    ]) {
      expect(body).toContain(`\\"title\\":\\"${title}\\"`);
    }
    for (const metric of [
      METRIC.registered,
      METRIC.reconnected,
      METRIC.unregistered,
      METRIC.swept,
      METRIC.silentHolders,
      METRIC.healthTransitions,
    ]) {
      expect(body).toContain(`\\"WorkloadRegistrar\\",\\"${metric}\\"`);
    }
  });

  it('outputs the dashboard URL', () => {
    template.hasOutput('DashboardUrl', { Value: Match.anyValue() });
  });
});

const TOPIC_SHAPE = { Ref: expect.stringMatching(/^MonitoringAlarmTopic/) };
