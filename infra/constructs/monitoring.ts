import { Duration, Stack } from 'aws-cdk-lib';
import type { WebSocketApi, WebSocketStage } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  AnomalyDetectionAlarm,
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
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
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
  /** EC2 state-change events that could not be handled (rule DLQ and on-failure destination). */
  instanceEventDeadLetters: IQueue;
}

const FIVE_MINUTES = Duration.minutes(5);

/**
 * The registrar's outcome counters (Powertools EMF, namespace WorkloadRegistrar) in their
 * service total: the dimension Powertools adds to every metric.
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

/** One reason of `Refused` or `Faults` (the error code or name), e.g. `Unauthenticated`. */
export function registrarMetricByReason(name: MetricName, reason: string): Metric {
  return new Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service: SERVICE_NAME, Reason: reason },
    statistic: 'Sum',
    period: FIVE_MINUTES,
    label: `${name} ${reason}`,
  });
}

/** A metric by reason for the dashboard: a Metrics Insights query, one line per `Reason`. */
function byReason(name: MetricName): MathExpression {
  return new MathExpression({
    expression: `SELECT SUM(${name}) FROM SCHEMA("${METRICS_NAMESPACE}", Reason, service) GROUP BY Reason`,
    usingMetrics: {},
    period: FIVE_MINUTES,
    label: name,
  });
}

/**
 * A fail-static count by zone for the dashboard: one line per `Zone`. MAX for a number of
 * cells each run states anew (five runs in a period are not five times the cells).
 */
function byZone(name: MetricName, statistic: 'SUM' | 'MAX' = 'SUM'): MathExpression {
  return new MathExpression({
    expression: `SELECT ${statistic}(${name}) FROM SCHEMA("${METRICS_NAMESPACE}", Zone, service) GROUP BY Zone`,
    usingMetrics: {},
    period: FIVE_MINUTES,
    label: name,
  });
}

/**
 * The authorizer's failures that are not refused tokens. API Gateway answers 401 only when a
 * REQUEST authorizer throws `Unauthorized`, so every bad, expired or revoked token is a Lambda
 * error; the authorizer counts each as `Refused{Reason=Unauthenticated}` before it throws. In
 * token mode no other function refuses with Unauthenticated (identity comes from the
 * authorizer), so Lambda errors minus those refusals are the crashes, timeouts and faults.
 */
export function authorizerFailures(authorize: IFunction): MathExpression {
  return new MathExpression({
    expression: 'errors - FILL(refusedTokens, 0)',
    usingMetrics: {
      errors: authorize.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
      refusedTokens: registrarMetricByReason(METRIC.refused, 'Unauthenticated'),
    },
    period: FIVE_MINUTES,
    label: 'Authorizer errors that are not refused tokens',
  });
}

/**
 * How many sweeper invocations a healthy schedule makes in the missed-runs window: at least
 * three ticks long (and 5 minutes), and at least half of its ticks must reach the function.
 * A tick that finds another run holding the lease still counts (the sweeper is alive); a
 * throttled tick does not (Lambda counts it as a throttle, not an invocation). Half, because
 * EventBridge's ticks do not line up with CloudWatch's periods: a period can see one fewer.
 */
export function sweeperRunExpectation(sweepRateMinutes: number): {
  window: Duration;
  minRuns: number;
} {
  const minutes = Math.max(5, 3 * sweepRateMinutes);
  const ticks = Math.floor(minutes / sweepRateMinutes);
  return { window: Duration.minutes(minutes), minRuns: Math.ceil(ticks / 2) };
}

/** Faults that page: 3 in 5 minutes (the SDK already retried each request 3 times). */
export const FAULT_THRESHOLD = 3;

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

    // Faults the functions counted (the table or the gateway failed, a bug): never refusals,
    // which anyone on the internet can cause and which are outcomes, not errors.
    this.alarm('RegistrarFaults', registrarMetric(METRIC.faults, 'Faults (all reasons)'), {
      threshold: FAULT_THRESHOLD,
      description: `The registrar counted ${FAULT_THRESHOLD} or more faults in 5 minutes (metric ${METRICS_NAMESPACE}/${METRIC.faults}; refusals are not counted). See docs/deploy.md#registrarfaults.`,
    });
    this.refusalSpikeAlarm();

    for (const { name, fn } of [...props.functions, { name: 'sweeper', fn: props.sweeper }]) {
      const title = name.charAt(0).toUpperCase() + name.slice(1);
      // A handled refusal is a status code, not a Lambda error: any error is a crash. The
      // authorizer is the exception: its 401 is a thrown error, subtracted here.
      const errors =
        name === 'authorize'
          ? authorizerFailures(fn)
          : fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' });
      this.alarm(`${title}Errors`, errors, {
        threshold: 1,
        description: `The ${name} function failed (uncaught error or timeout${name === 'authorize' ? ', refused tokens excluded' : ''}). See docs/deploy.md#function-errors.`,
      });
      // The sweeper's throttles are judged by the runs they cost (SweeperMissedRuns below): a
      // throttled tick is retried within its minute, and one lost tick is made up by the next.
      if (fn === props.sweeper) continue;
      this.alarm(
        `${title}Throttles`,
        fn.metricThrottles({ period: FIVE_MINUTES, statistic: 'Sum' }),
        {
          threshold: 1,
          description: `The ${name} function was throttled (concurrency exhausted). See docs/deploy.md#function-throttles.`,
        },
      );
    }

    const { window, minRuns } = sweeperRunExpectation(props.sweepRateMinutes);
    this.alarm(
      'SweeperMissedRuns',
      props.sweeper.metricInvocations({ period: window, statistic: 'Sum' }),
      {
        threshold: minRuns,
        comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
        // No data at all is exactly the failure this alarm is for.
        treatMissingData: TreatMissingData.BREACHING,
        description: `The sweeper ran fewer than ${minRuns} times in ${window.toMinutes()} minutes (throttled, not invoked, or the schedule is disabled). See docs/deploy.md#sweepermissedruns.`,
      },
    );

    // API Gateway could not run the $connect integration (Lambda failed, timed out or was
    // throttled): agents cannot register. Refusals (401/403/404) are not execution errors.
    this.alarm('ConnectExecutionErrors', connectMetric(props, 'ExecutionError'), {
      threshold: 5,
      description:
        'API Gateway failed to run $connect 5 or more times in 5 minutes. See docs/deploy.md#connectexecutionerrors.',
    });

    // An EC2 state change nobody handled: the rule could not invoke the function, or the
    // function failed it three times. The instance's entries then leave only by the sweeper.
    this.alarm(
      'InstanceEventDeadLetters',
      props.instanceEventDeadLetters.metricApproximateNumberOfMessagesVisible({
        period: FIVE_MINUTES,
        statistic: 'Maximum',
      }),
      {
        threshold: 1,
        description:
          'An EC2 state-change event could not be handled and is in the dead-letter queue. See docs/deploy.md#instanceeventdeadletters.',
      },
    );

    // The sweeper is falling behind: runs end at their deadline with work left, or API
    // Gateway does not answer its liveness checks (a lost `$disconnect` then goes unnoticed).
    // Sustained for 15 minutes: one run cut short by a mass expiry is paced, not a fault.
    this.alarm(
      'SweepFallingBehind',
      new MathExpression({
        expression: 'FILL(stopped, 0) + FILL(unknown, 0)',
        usingMetrics: {
          stopped: registrarMetric(METRIC.sweepStoppedEarly, 'Runs stopped at the deadline'),
          unknown: registrarMetric(METRIC.livenessUnknown, 'Liveness checks unanswered'),
        },
        period: FIVE_MINUTES,
        label: 'Sweeper runs cut short, or liveness checks unanswered',
      }),
      {
        threshold: 1,
        evaluationPeriods: 3,
        description: `For 15 minutes, sweeper runs stopped at their deadline with work left, or API Gateway did not answer liveness checks (metrics ${METRICS_NAMESPACE}/${METRIC.sweepStoppedEarly}, ${METRIC.livenessUnknown}; the sweeper's log says why). See docs/deploy.md#sweepfallingbehind.`,
      },
    );

    // Fail static: the sweeper holds deletions (it suspects its own connectivity), or a hold
    // outlived its bound and deletions resumed. Either needs a person: the mesh keeps VMs
    // that may be gone, or is losing entries after a long outage.
    this.alarm(
      'SweepHeld',
      new MathExpression({
        expression: 'FILL(held, 0) + FILL(expired, 0)',
        usingMetrics: {
          held: registrarMetric(METRIC.sweepHeld, 'Deletions held'),
          expired: registrarMetric(METRIC.sweepHoldExpired, 'Deletions after the hold bound'),
        },
        period: FIVE_MINUTES,
        label: 'Deletions held, or made past the hold bound',
      }),
      {
        threshold: 1,
        description: `The sweeper is holding deletions (every zone disrupted, or no VM could connect), or resumed them after the hold bound (metrics ${METRICS_NAMESPACE}/${METRIC.sweepHeld}, ${METRIC.sweepHoldExpired}). Run registrar sweep status. See docs/operations.md.`,
      },
    );

    this.dashboard = this.buildDashboard(props);
  }

  /**
   * Refusals far above their usual level for 15 minutes: not a fault of the registrar, but
   * how an operator learns that a fleet cannot register (tokens expired, a group deleted, a
   * bad agent rollout). Sustained and relative to the learned band, so one client's burst of
   * bad requests does not page; it notifies the topic like the other alarms.
   */
  private refusalSpikeAlarm(): void {
    const alarm = new AnomalyDetectionAlarm(this, 'RefusalSpike', {
      metric: registrarMetric(METRIC.refused, 'Refused (all reasons)'),
      stdDevs: 4,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      comparisonOperator: ComparisonOperator.GREATER_THAN_UPPER_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: `Refusals (metric ${METRICS_NAMESPACE}/${METRIC.refused}) stayed above their anomaly band for 15 minutes. See docs/deploy.md#refusalspike.`,
    });
    alarm.addAlarmAction(new SnsAction(this.topic));
    alarm.addOkAction(new SnsAction(this.topic));
    this.alarms.push(alarm);
  }

  private alarm(
    id: string,
    metric: IMetric,
    options: {
      threshold: number;
      description: string;
      comparisonOperator?: ComparisonOperator;
      treatMissingData?: TreatMissingData;
      /** Consecutive periods that must all breach; default 1. */
      evaluationPeriods?: number;
    },
  ): void {
    const alarm = new Alarm(this, id, {
      metric,
      threshold: options.threshold,
      evaluationPeriods: options.evaluationPeriods ?? 1,
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
        // Groups with a heartbeat: VMs hung or cut off with their connection open.
        registrarMetric(METRIC.silentHolders, 'Silent connections closed'),
      ]),
    );
    dashboard.addWidgets(
      graph('Health transitions', [registrarMetric(METRIC.healthTransitions, 'Transitions')]),
      graph('Faults by reason', [byReason(METRIC.faults)]),
      graph('Refusals by reason', [byReason(METRIC.refused)]),
      graph(
        'Function errors',
        [...props.functions, { name: 'sweeper', fn: props.sweeper }].map(({ name, fn }) =>
          fn.metricErrors({ period: FIVE_MINUTES, label: name }),
        ),
      ),
    );
    dashboard.addWidgets(
      graph('Sweep held and slowed, by zone (fail static)', [
        byZone(METRIC.sweepHeld),
        byZone(METRIC.sweepSlowed),
        registrarMetric(METRIC.sweepHoldExpired, 'Deleted after the hold bound'),
      ]),
      // The cells' words (lib/domain/cell-mode.ts), as `registrar sweep status` shows them.
      graph('Cells slowed and held, by zone (fail static)', [
        byZone(METRIC.cellsSlowed, 'MAX'),
        byZone(METRIC.cellsHeld, 'MAX'),
      ]),
      graph('Entries removed for terminated instances', [
        registrarMetric(METRIC.instanceEntriesRemoved, 'Removed (EC2 state change)'),
      ]),
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
