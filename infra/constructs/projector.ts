import { Duration, Validations } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, Metric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { ISecurityGroup, IVpc, SubnetSelection } from 'aws-cdk-lib/aws-ec2';
import { Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement, type Role } from 'aws-cdk-lib/aws-iam';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../../lib/config.ts';
import type { GroupSource } from '../../lib/domain/group-source.ts';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.ts';
import { PROJECTION_METRIC } from '../../lib/projection/projection-metrics.ts';
import {
  PROJECTOR_ENV,
  parseClusterRanges,
  parseTargets,
} from '../../lib/projection/projector-config.ts';
import type { Target } from '../../lib/projection/report.ts';
import { ROLLOUT_ENV } from '../../lib/rollout/rollout-config.ts';
import { GROUP_ITEM_ATTRIBUTES } from '../../lib/store/item-codec.ts';
import { PARTITIONS } from '../../lib/store/table-definition.ts';
import { StackOptionsError } from '../stack-options.ts';
import { RegistrarFunction } from './registrar-function.ts';
import { partitionStatements, tableAccess } from './table-access.ts';

export interface ProjectorProps {
  /** The registry table; it must have a stream (KEYS_ONLY is enough: the projector re-reads). */
  table: ITable;
  clusterName: string;
  /** The cluster's API endpoint (`aws eks describe-cluster --query cluster.endpoint`). */
  endpoint: string;
  /** Base64 CA data (`cluster.certificateAuthority.data`). */
  certificateAuthority: string;
  targets: readonly Target[];
  /**
   * The cluster's pod and Service CIDRs, comma-separated: the projector writes no endpoint in
   * them (docs/kubernetes.md says how to find them). Default: none.
   */
  clusterRanges?: string;
  /** Full reconcile every this many minutes. Default 5. */
  scheduleMinutes?: number;
  /** Alarms notify this topic when given. */
  alarmTopic?: ITopic;
  /**
   * Where WorkloadGroups come from. `cluster`: the projector syncs them from the cluster every
   * `groupSyncMinutes` and may write group items (only those). Default: the registry (the
   * scheduled run then reports cluster copies that drift).
   */
  groupSource?: GroupSource;
  /** Groups from the cluster: how often they are listed. Default 1 (EventBridge's smallest). */
  groupSyncMinutes?: number;
  /** For a cluster with a private endpoint only: the VPC the function runs in. */
  vpc?: IVpc;
  vpcSubnets?: SubnetSelection;
  securityGroups?: ISecurityGroup[];
}

/**
 * Projects the registry into a Kubernetes cluster. Two triggers, one level-triggered
 * reconcile: the table's stream (seconds after a change; batched, bisected on error, failed
 * batches parked in a DLQ with an alarm) and a schedule (a full reconcile that repairs
 * anything a lost batch or a hand edit left behind).
 *
 * The function needs no AWS permission on the cluster: it signs an EKS token with its own
 * role, which an EKS access entry maps to the RBAC in docs/kubernetes.md.
 */
export class Projector extends Construct {
  readonly function: NodejsFunction;
  readonly deadLetterQueue: Queue;
  readonly rule: Rule;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: ProjectorProps) {
    super(scope, id);
    if (!props.table.tableStreamArn) {
      throw new Error('the registry table has no stream; enable one (KEYS_ONLY) for the projector');
    }
    const targets = parseTargets(props.targets.join(','));
    const projector = new RegistrarFunction(this, 'Function', {
      name: 'project',
      entry: 'functions/project.ts',
      description:
        'workload-registrar projector: reads the registry, writes the cluster (EKS access entry)',
      // A full reconcile of 10,000 entries is ~25 list pages and diffing in memory; 1 GB buys
      // the CPU for it. The timeout covers an initial sync (every object written once).
      memorySize: 1024,
      timeout: Duration.minutes(5),
      vpc: props.vpc,
      vpcSubnets: props.vpcSubnets,
      securityGroups: props.securityGroups,
      // @kubernetes/client-node is bundled: it is not in the Lambda runtime.
      environment: {
        [ENV.tableName]: props.table.tableName,
        [PROJECTOR_ENV.targets]: targets.join(','),
        [PROJECTOR_ENV.clusterName]: props.clusterName,
        [PROJECTOR_ENV.endpoint]: props.endpoint,
        [PROJECTOR_ENV.certificateAuthority]: props.certificateAuthority,
        [ROLLOUT_ENV.groupSource]: props.groupSource?.kind ?? 'registry',
        ...(props.groupSource?.kind === 'cluster' && props.groupSource.selector
          ? { [ROLLOUT_ENV.groupSelector]: props.groupSource.selector }
          : {}),
        ...(props.clusterRanges ? { [PROJECTOR_ENV.clusterRanges]: props.clusterRanges } : {}),
      },
    });
    this.function = projector.function;
    const role = projector.role;
    // Not `grantReadData`: that reads every item, join-token hashes and IAM allow rules
    // included, and Scans. The projector reads groups and entries (NS#...) and the namespace
    // index, by GetItem and Query only; the stream read is the event source's own grant.
    for (const statement of partitionStatements(
      props.table.tableArn,
      tableAccess('projector', 'token').items,
    )) {
      role.addToPrincipalPolicy(statement);
    }
    acknowledgeStreamListing(role);
    if (props.groupSource?.kind === 'cluster') this.#syncGroups(props, role);

    this.deadLetterQueue = new Queue(this, 'DeadLetters', {
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    Validations.of(this.deadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is the dead-letter queue: the on-failure destination of the stream event source.',
    });
    this.function.addEventSource(
      new DynamoEventSource(props.table, {
        startingPosition: StartingPosition.LATEST,
        // One reconcile per batch, not per record: a burst of connects costs one run.
        batchSize: 100,
        maxBatchingWindow: Duration.seconds(2),
        bisectBatchOnError: true,
        retryAttempts: 3,
        // A stream record older than the schedule period is repaired by the schedule anyway.
        maxRecordAge: Duration.minutes(15),
        onFailure: new SqsDlq(this.deadLetterQueue),
        // Only groups and entries (pk NS#...) can change the cluster; connection records and
        // tokens never invoke the function.
        filters: [
          FilterCriteria.filter({
            dynamodb: { Keys: { pk: { S: FilterRule.beginsWith('NS#') } } },
          }),
        ],
      }),
    );

    const minutes = props.scheduleMinutes ?? 5;
    this.rule = new Rule(this, 'FullReconcile', {
      description: 'workload-registrar: reconcile the whole registry into the cluster',
      schedule: Schedule.rate(Duration.minutes(minutes)),
    });
    // A failed full reconcile is not retried: the next tick is the retry. Both places: the
    // rule's retry policy covers EventBridge failing to invoke, and Lambda's own async retries
    // (two by default) cover the function failing once invoked.
    this.rule.addTarget(new LambdaFunction(this.function, { retryAttempts: 0 }));
    this.function.configureAsyncInvoke({
      retryAttempts: 0,
      maxEventAge: Duration.minutes(minutes),
    });

    this.alarm(
      'DeadLetters',
      this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
      {
        description:
          'Stream batches the projector failed on after retries are parked in the DLQ; the schedule repairs the cluster, but find out why.',
      },
      props.alarmTopic,
    );
    // A timeout, an out-of-memory or a crash before the report emits no ProjectionErrors.
    this.alarm(
      'FunctionErrors',
      this.function.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      {
        description:
          'The projector function failed (uncaught error, timeout or out of memory); its logs say why.',
      },
      props.alarmTopic,
    );
    this.alarm(
      'Errors',
      projectionErrors(),
      {
        description:
          'The projector could not write the cluster: access denied, CRD not installed, objects refused (see its logs).',
      },
      props.alarmTopic,
    );
  }

  /**
   * Groups from the cluster: a schedule of its own (`{"groupSync": true}`: the sync alone, a
   * list of the cluster's WorkloadGroups and a Query per namespace), and writes of group items
   * only: PutItem whose attributes are a group item's (`dynamodb:Attributes`), in the
   * namespaces' partitions, and the namespace index. No DeleteItem: a group deleted in the
   * cluster is removed, with its entries, by the rollout function.
   */
  #syncGroups(props: ProjectorProps, role: Role): void {
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['dynamodb:PutItem'],
        resources: [props.table.tableArn],
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [PARTITIONS.namespaces] },
          'ForAllValues:StringEquals': { 'dynamodb:Attributes': [...GROUP_ITEM_ATTRIBUTES] },
          StringEqualsIfExists: { 'dynamodb:ReturnValues': ['NONE'] },
        },
      }),
    );
    for (const statement of partitionStatements(props.table.tableArn, [
      { actions: ['PutItem'], partitions: [PARTITIONS.namespaceIndex] },
      { actions: ['Query', 'UpdateItem'], partitions: [PARTITIONS.rollouts] },
      // A synced group whose heartbeat changed is counted, so the sweeper lists it at once.
      { actions: ['UpdateItem'], partitions: [PARTITIONS.heartbeatChanges] },
    ])) {
      role.addToPrincipalPolicy(statement);
    }
    const minutes = props.groupSyncMinutes ?? 1;
    new Rule(this, 'GroupSync', {
      description:
        "workload-registrar: sync the registry's groups from the cluster's WorkloadGroups",
      schedule: Schedule.rate(Duration.minutes(minutes)),
      targets: [
        new LambdaFunction(this.function, {
          event: RuleTargetInput.fromObject({ groupSync: true }),
          retryAttempts: 0,
        }),
      ],
    });
  }

  private alarm(
    id: string,
    metric: Metric,
    text: { description: string },
    topic: ITopic | undefined,
  ): void {
    const alarm = new Alarm(this, `${id}Alarm`, {
      metric,
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: text.description,
    });
    if (topic) {
      // The OK notification tells whoever was paged that it is over.
      alarm.addAlarmAction(new SnsAction(topic));
      alarm.addOkAction(new SnsAction(topic));
    }
    this.alarms.push(alarm);
  }
}

/** The one wildcard on the role, named so cdk-nag can check it. */
function acknowledgeStreamListing(role: Role): void {
  Validations.of(role).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'dynamodb:ListStreams, added by the DynamoDB event source, has no resource-level permissions.',
  });
}

/** Errors counted by the projector (Powertools EMF: namespace WorkloadRegistrar, service). */
export function projectionErrors(): Metric {
  return new Metric({
    namespace: METRICS_NAMESPACE,
    metricName: PROJECTION_METRIC.errors,
    dimensionsMap: { service: SERVICE_NAME },
    statistic: 'Sum',
    period: Duration.minutes(5),
  });
}

/** The context keys (`cdk deploy -c projectorClusterName=prod ...`) the projector reads. */
export const PROJECTOR_OPTION_KEYS = {
  clusterName: 'projectorClusterName',
  endpoint: 'projectorEndpoint',
  certificateAuthority: 'projectorCertificateAuthority',
  targets: 'projectorTargets',
  scheduleMinutes: 'projectorScheduleMinutes',
  clusterRanges: 'projectorClusterRanges',
} as const;

export type ProjectorOptions = Pick<
  ProjectorProps,
  | 'clusterName'
  | 'endpoint'
  | 'certificateAuthority'
  | 'targets'
  | 'scheduleMinutes'
  | 'clusterRanges'
>;

/**
 * The projector's stack options from context; undefined when no cluster is named (no
 * projector is deployed). A bad value fails the synth with the option's name and value.
 */
export function resolveProjectorOptions(node: Construct['node']): ProjectorOptions | undefined {
  const read = (key: string) => {
    const value = node.tryGetContext(key);
    return value === undefined || value === '' ? undefined : String(value);
  };
  const clusterName = read(PROJECTOR_OPTION_KEYS.clusterName);
  if (clusterName === undefined) return undefined;
  const problems: string[] = [];
  const endpoint = read(PROJECTOR_OPTION_KEYS.endpoint) ?? '';
  if (!/^https:\/\/\S+$/.test(endpoint))
    problems.push(
      `${PROJECTOR_OPTION_KEYS.endpoint} (value '${endpoint}'): must be the cluster's https:// endpoint`,
    );
  const certificateAuthority = read(PROJECTOR_OPTION_KEYS.certificateAuthority) ?? '';
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(certificateAuthority)) {
    problems.push(
      `${PROJECTOR_OPTION_KEYS.certificateAuthority}: must be the base64 certificateAuthority.data of the cluster`,
    );
  }
  const minutes = Number(read(PROJECTOR_OPTION_KEYS.scheduleMinutes) ?? '5');
  if (!Number.isInteger(minutes) || minutes < 1)
    problems.push(
      `${PROJECTOR_OPTION_KEYS.scheduleMinutes} (value '${minutes}'): must be whole minutes, 1 or more`,
    );
  let targets: Target[] = [];
  try {
    targets = parseTargets(read(PROJECTOR_OPTION_KEYS.targets) ?? 'istio');
  } catch (error) {
    problems.push(`${PROJECTOR_OPTION_KEYS.targets}: ${(error as Error).message}`);
  }
  let clusterRanges: string | undefined;
  const ranges = read(PROJECTOR_OPTION_KEYS.clusterRanges);
  if (ranges !== undefined) {
    try {
      const cidrs = parseClusterRanges(ranges, PROJECTOR_OPTION_KEYS.clusterRanges);
      clusterRanges = cidrs.map((cidr) => cidr.text).join(',');
    } catch (error) {
      problems.push((error as Error).message.replace(/^invalid /, ''));
    }
  }
  if (problems.length > 0) {
    throw new StackOptionsError(`invalid projector option ${problems.join('; ')}`);
  }
  return {
    clusterName,
    endpoint,
    certificateAuthority,
    targets,
    scheduleMinutes: minutes,
    ...(clusterRanges ? { clusterRanges } : {}),
  };
}
