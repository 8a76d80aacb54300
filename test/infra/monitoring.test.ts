import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { synthTemplate } from './synth-stack.ts';

const TOPIC = { Ref: Match.stringLikeRegexp('^MonitoringAlarmTopic') };

describe('alarms and dashboard', () => {
  let template: Template;
  beforeAll(() => {
    template = synthTemplate();
  });

  it('alarms on 5 registrar errors of any reason in 5 minutes', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: [
        Match.objectLike({
          Expression: 'SELECT SUM(Errors) FROM SCHEMA("WorkloadRegistrar", Reason, service)',
          Period: 300,
        }),
      ],
      Threshold: 5,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [TOPIC],
    });
  });

  it.each(['Authorize', 'Connect', 'Disconnect', 'Message', 'Sweep'])(
    'alarms on any error and any throttle of the %s function',
    (name) => {
      for (const metricName of ['Errors', 'Throttles']) {
        template.hasResourceProperties('AWS::CloudWatch::Alarm', {
          Namespace: 'AWS/Lambda',
          MetricName: metricName,
          Dimensions: [
            {
              Name: 'FunctionName',
              Value: { Ref: Match.stringLikeRegexp(`^(Functions)?${name}`) },
            },
          ],
          Statistic: 'Sum',
          Threshold: 1,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          AlarmActions: [TOPIC],
        });
      }
    },
  );

  it('alarms when the sweeper has not run for 5 minutes, counting no data as missed', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      Dimensions: [
        { Name: 'FunctionName', Value: { Ref: Match.stringLikeRegexp('^SweepSweeper') } },
      ],
      Period: 300,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    });
  });

  it('widens the missed-run window to three ticks of a slower schedule', () => {
    const template = synthTemplate({ context: { sweepRate: '10m' } });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Invocations',
      Period: 1800,
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

  it('sends every alarm, and its recovery, to the alarm topic', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    // registrar errors + 5 functions x (errors, throttles) + missed sweeps + $connect errors
    expect(alarms.length).toBe(1 + 5 * 2 + 1 + 1);
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
      'Errors by reason',
    ]) {
      expect(body).toContain(`\\"title\\":\\"${title}\\"`);
    }
    for (const metric of [
      'Registered',
      'Reconnected',
      'Unregistered',
      'Swept',
      'HealthTransitions',
    ]) {
      expect(body).toContain(`\\"WorkloadRegistrar\\",\\"${metric}\\"`);
    }
  });

  it('outputs the dashboard URL', () => {
    template.hasOutput('DashboardUrl', { Value: Match.anyValue() });
  });
});

const TOPIC_SHAPE = { Ref: expect.stringMatching(/^MonitoringAlarmTopic/) };
