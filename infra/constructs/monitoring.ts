import { Duration, Stack } from 'aws-cdk-lib';
import type { WebSocketApi, WebSocketStage } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import {
  METRIC,
  METRICS_NAMESPACE,
  type MetricName,
  SERVICE_NAME,
} from '../../lib/observability.ts';

export interface MonitoringProps {
  functions: { name: string; fn: IFunction }[];
  sweeper: IFunction;
  sweepRateMinutes: number;
  api: WebSocketApi;
  stage: WebSocketStage;
  alarmEmail: string | undefined;
}

const FIVE_MINUTES = Duration.minutes(5);

/**
 * The registrar's outcome counters (Powertools EMF, namespace WorkloadRegistrar). Outcomes
 * carry the `service` dimension Powertools adds; errors add `Reason`.
 */
export function registrarMetric(name: MetricName, label: string): Metric {
  return new Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service: SERVICE_NAME },
    statistic: 'Sum',
    period: FIVE_MINUTES,
    label,
  });
}

/**
 * Errors of every reason, summed. Each reason is its own metric (dimensions service + Reason)
 * and an alarm cannot SEARCH, so this is a Metrics Insights query, which alarms can evaluate.
 */
export function registrationErrors(): MathExpression {
  return new MathExpression({
    expression: `SELECT SUM(${METRIC.errors}) FROM SCHEMA("${METRICS_NAMESPACE}", Reason, service)`,
    usingMetrics: {},
    period: FIVE_MINUTES,
    label: 'Registrar errors (all reasons)',
  });
}

/** Alarms on everything that needs a person, an SNS topic for them, and one dashboard. */
export class Monitoring extends Construct {
  readonly topic: Topic;
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.topic = new Topic(this, 'AlarmTopic', {
      displayName: 'workload-registrar alarms',
      enforceSSL: true,
    });
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));

    // Errors the functions counted: failed registrations, disconnects, health writes, sweeps.
    this.alarm('RegistrationErrors', registrationErrors(), {
      threshold: 5,
      description:
        'The registrar counted 5 or more errors in 5 minutes (metric WorkloadRegistrar/Errors, all reasons). See docs/deploy.md#registrationerrors.',
    });

    for (const { name, fn } of [...props.functions, { name: 'sweeper', fn: props.sweeper }]) {
      const title = name.charAt(0).toUpperCase() + name.slice(1);
      // A handled refusal is a status code, not a Lambda error: any error is a crash.
      this.alarm(`${title}Errors`, fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }), {
        threshold: 1,
        description: `The ${name} function failed (uncaught error or timeout). See docs/deploy.md#function-errors.`,
      });
      this.alarm(
        `${title}Throttles`,
        fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }),
        {
          threshold: 1,
          description: `The ${name} function was throttled (concurrency exhausted). See docs/deploy.md#function-throttles.`,
        },
      );
    }

    // The schedule fires every sweepRate minutes; three missed ticks in a row means the rule
    // is disabled, the function cannot be invoked, or EventBridge is impaired.
    const missedRunWindow = Duration.minutes(Math.max(5, 3 * props.sweepRateMinutes));
    this.alarm(
      'SweeperMissedRuns',
      props.sweeper.metricInvocations({ period: missedRunWindow, statistic: 'Sum' }),
      {
        threshold: 1,
        comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
        // No data at all is exactly the failure this alarm is for.
        treatMissingData: TreatMissingData.BREACHING,
        description: `The sweeper did not run in ${missedRunWindow.toMinutes()} minutes. See docs/deploy.md#sweepermissedruns.`,
      },
    );

    // API Gateway could not run the $connect integration (Lambda failed, timed out or was
    // throttled): agents cannot register. Refusals (401/403/404) are not execution errors.
    this.alarm('ConnectExecutionErrors', connectMetric(props, 'ExecutionError'), {
      threshold: 5,
      description:
        'API Gateway failed to run $connect 5 or more times in 5 minutes. See docs/deploy.md#connectexecutionerrors.',
    });

    this.dashboard = this.buildDashboard(props);
  }

  private alarm(
    id: string,
    metric: IMetric,
    options: {
      threshold: number;
      description: string;
      comparisonOperator?: ComparisonOperator;
      treatMissingData?: TreatMissingData;
    },
  ): void {
    const alarm = new Alarm(this, id, {
      metric,
      threshold: options.threshold,
      evaluationPeriods: 1,
      comparisonOperator:
        options.comparisonOperator ?? ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      // No invocations means no errors, not an unknown state.
      treatMissingData: options.treatMissingData ?? TreatMissingData.NOT_BREACHING,
      alarmDescription: options.description,
    });
    alarm.addAlarmAction(new SnsAction(this.topic));
    alarm.addOkAction(new SnsAction(this.topic));
    this.alarms.push(alarm);
  }

  private buildDashboard(props: MonitoringProps): Dashboard {
    const stack = Stack.of(this);
    const dashboard = new Dashboard(this, 'Dashboard', {
      // Dashboard names are unique per account, not per region: the same stack deployed in
      // two regions must not collide.
      dashboardName: `${stack.stackName}-${stack.region}`,
    });
    const graph = (title: string, metrics: IMetric[]) =>
      new GraphWidget({ title, left: metrics, width: 8, height: 6 });
    dashboard.addWidgets(
      graph('Registrations', [
        registrarMetric(METRIC.registered, 'Registered (new entries)'),
        registrarMetric(METRIC.reconnected, 'Reconnected'),
      ]),
      graph('Disconnects', [registrarMetric(METRIC.unregistered, 'Unregistered')]),
      graph('Sweeps', [
        registrarMetric(METRIC.swept, 'Entries swept'),
        props.sweeper.metricInvocations({ period: FIVE_MINUTES, label: 'Sweeper runs' }),
      ]),
    );
    dashboard.addWidgets(
      graph('Health transitions', [registrarMetric(METRIC.healthTransitions, 'Transitions')]),
      graph('Errors by reason', [
        new MathExpression({
          expression: `SELECT SUM(${METRIC.errors}) FROM SCHEMA("${METRICS_NAMESPACE}", Reason, service) GROUP BY Reason`,
          usingMetrics: {},
          period: FIVE_MINUTES,
          label: 'Errors',
        }),
      ]),
      graph(
        'Function errors',
        [...props.functions, { name: 'sweeper', fn: props.sweeper }].map(({ name, fn }) =>
          fn.metricErrors({ period: FIVE_MINUTES, label: name }),
        ),
      ),
    );
    dashboard.addWidgets(
      graph('WebSocket connects and messages', [
        connectMetric(props, 'ConnectCount'),
        stageMetric(props, 'MessageCount'),
      ]),
      graph('$connect failures', [
        connectMetric(props, 'ExecutionError'),
        connectMetric(props, 'IntegrationError'),
        connectMetric(props, 'ClientError'),
      ]),
    );
    return dashboard;
  }
}

/** A metric of the $connect route (per-route metrics are enabled on the stage). */
function connectMetric(props: MonitoringProps, metricName: string): Metric {
  return new Metric({
    namespace: 'AWS/ApiGateway',
    metricName,
    dimensionsMap: {
      ApiId: props.api.apiId,
      Stage: props.stage.stageName,
      Route: '$connect',
    },
    statistic: 'Sum',
    period: FIVE_MINUTES,
    label: `$connect ${metricName}`,
  });
}

function stageMetric(props: MonitoringProps, metricName: string): Metric {
  return props.stage.metric(metricName, { statistic: 'Sum', period: FIVE_MINUTES });
}
