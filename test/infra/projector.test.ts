import { App, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AttributeType, BillingMode, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { Projector, resolveProjectorOptions } from '../../infra/constructs/projector.ts';
import { METRICS_NAMESPACE } from '../../lib/observability.ts';
import { PROJECTION_METRIC } from '../../lib/projection/projection-metrics.ts';
import { namespaceIndexKey } from '../../lib/store/dynamodb-namespace-index.ts';
import { POLICY_PARTITION } from '../../lib/store/dynamodb-policy-store.ts';
import { connectionKey, entryKey, groupKey, TOKEN_PARTITION } from '../../lib/store/item-codec.ts';
import { PARTITIONS, zonePartition } from '../../lib/store/table-definition.ts';
import { actionsOf, type Statement, statementsOfRole } from './policy-statements.ts';
import { synthTemplate } from './synth-stack.ts';

/** IAM's StringLike: `*` matches any run of characters, everything else itself. */
function like(pattern: string, value: string): boolean {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*');
  return new RegExp(`^${escaped}$`).test(value);
}

// A bare stack with a test table that has a stream; bundling is skipped (bundle-contents and
// `cdk synth` prove esbuild), so this only checks what the template says.
function synth(props: { stream?: boolean; context?: Record<string, unknown> } = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...props.context } });
  const stack = new Stack(app, 'Test', { env: { account: '123456789012', region: 'eu-west-1' } });
  const table = new Table(stack, 'Registry', {
    partitionKey: { name: 'pk', type: AttributeType.STRING },
    sortKey: { name: 'sk', type: AttributeType.STRING },
    billingMode: BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    ...(props.stream === false ? {} : { stream: StreamViewType.KEYS_ONLY }),
  });
  const topic = new Topic(stack, 'Alarms', { enforceSSL: true });
  const projector = () =>
    new Projector(stack, 'Projector', {
      table,
      clusterName: 'prod',
      endpoint: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com',
      certificateAuthority: 'LS0tLS1CRUdJTg==',
      targets: ['istio', 'endpointslices'],
      alarmTopic: topic,
    });
  return { stack, projector };
}

describe('Projector construct', () => {
  let template: Template;
  beforeAll(() => {
    const { stack, projector } = synth();
    projector();
    template = Template.fromStack(stack);
  });

  it('runs on the table stream in batches, bisecting failed batches into a DLQ', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^Registry'), 'StreamArn'] },
      StartingPosition: 'LATEST',
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 2,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 3,
      DestinationConfig: {
        OnFailure: {
          Destination: { 'Fn::GetAtt': [Match.stringLikeRegexp('^ProjectorDeadLetters'), 'Arn'] },
        },
      },
      FilterCriteria: {
        Filters: [
          { Pattern: JSON.stringify({ dynamodb: { Keys: { pk: { S: [{ prefix: 'NS#' }] } } } }) },
        ],
      },
    });
  });

  it('reconciles everything on a schedule, every 5 minutes by default', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(5 minutes)',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^ProjectorFunction'), 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0 },
        }),
      ],
    });
  });

  it('passes the cluster and targets to the function, and nothing secret', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Environment: {
        Variables: Match.objectLike({
          REGISTRAR_PROJECTION_TARGETS: 'istio,endpointslices',
          REGISTRAR_EKS_CLUSTER_NAME: 'prod',
          REGISTRAR_EKS_ENDPOINT: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com',
          REGISTRAR_EKS_CA: 'LS0tLS1CRUdJTg==',
          REGISTRAR_TABLE: { Ref: Match.stringLikeRegexp('^Registry') },
        }),
      },
    });
  });

  /** The DynamoDB statements of the projector's role. */
  function dynamoStatements() {
    return statementsOfRole(template, 'Projector/Function/Role').filter((s) =>
      actionsOf([s]).some((a) => a.startsWith('dynamodb:')),
    ) as (Statement & { Condition?: Record<string, Record<string, string[]>> })[];
  }

  it('may GetItem and Query only groups, entries and the namespace index (dynamodb:LeadingKeys)', () => {
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Effect: 'Allow',
            Action: ['dynamodb:GetItem', 'dynamodb:Query'],
            Resource: { 'Fn::GetAtt': [Match.stringLikeRegexp('^Registry'), 'Arn'] },
            Condition: {
              'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['NS#*', 'NAMESPACES'] },
            },
          },
        ]),
      },
      Roles: [{ Ref: Match.stringLikeRegexp('^ProjectorFunctionRole') }],
    });
  });

  it('reads the table only under that condition, never by Scan, and writes nothing', () => {
    const statements = dynamoStatements();
    const actions = actionsOf(statements);
    expect([...new Set(actions)]).toEqual([
      'dynamodb:DescribeStream',
      'dynamodb:GetItem',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
      'dynamodb:Query',
    ]);
    // Every statement that reads items names the partitions; the stream actions read records
    // of keys only, from the stream's ARN.
    for (const statement of statements) {
      const itemActions = actionsOf([statement]).filter((a) => /GetItem|Query/.test(a));
      if (itemActions.length === 0) {
        expect(JSON.stringify(statement.Resource)).toMatch(/StreamArn|"\*"/);
      } else {
        // Groups, entries, the namespace index; and the namespaces' settings (their address
        // ranges), which it may only Query.
        const keys = statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'];
        if (JSON.stringify(keys) === '["NSCONFIG"]') {
          expect(itemActions).toEqual(['dynamodb:Query']);
          continue;
        }
        expect(keys).toEqual(['NS#*', 'NAMESPACES']);
        expect(JSON.stringify(statement.Resource)).not.toContain('/index/');
      }
    }
  });

  it('is denied every partition but groups, entries and the namespace index', () => {
    const granted = dynamoStatements().flatMap(
      (s) => s.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] ?? [],
    );
    const allowed = (pk: string) => granted.some((pattern) => like(pattern, pk));
    expect(allowed(groupKey({ namespace: 'shop', name: 'web' }).pk)).toBe(true);
    expect(allowed(entryKey({ namespace: 'shop', name: 'web-1' }).pk)).toBe(true);
    expect(allowed(namespaceIndexKey('shop').pk)).toBe(true);
    for (const pk of [
      TOKEN_PARTITION,
      POLICY_PARTITION,
      PARTITIONS.config,
      PARTITIONS.sweeper,
      'ZONE',
      zonePartition(3),
      connectionKey('Lx1abcd=').pk,
    ]) {
      expect(allowed(pk), pk).toBe(false);
    }
  });

  it('still sends failed stream batches to its dead-letter queue', () => {
    const policies = template.findResources('AWS::IAM::Policy');
    const actions = Object.values(policies).flatMap((policy) =>
      (policy.Properties.PolicyDocument.Statement as { Action: string | string[] }[]).flatMap((s) =>
        [s.Action].flat(),
      ),
    );
    expect(actions).toContain('sqs:SendMessage');
  });

  it('alarms on a message in the DLQ and on projection errors, to the alarm topic', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Namespace: 'AWS/SQS',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [{ Ref: Match.stringLikeRegexp('^Alarms') }],
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: PROJECTION_METRIC.errors,
      Namespace: METRICS_NAMESPACE,
      Dimensions: [{ Name: 'service', Value: 'workload-registrar' }],
      Threshold: 1,
      AlarmActions: [{ Ref: Match.stringLikeRegexp('^Alarms') }],
    });
  });

  it('sends each alarm and its recovery (OK) to the alarm topic', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms.length).toBeGreaterThanOrEqual(3);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: expect.stringMatching(/^Alarms/) }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: expect.stringMatching(/^Alarms/) }]);
    }
  });

  it('alarms on any Lambda error of the function: a timeout or out-of-memory counts nothing', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [
        { Name: 'FunctionName', Value: { Ref: Match.stringLikeRegexp('^ProjectorFunction') } },
      ],
      Statistic: 'Sum',
      Threshold: 1,
      AlarmActions: [{ Ref: Match.stringLikeRegexp('^Alarms') }],
    });
  });

  it('does not let Lambda retry a failed scheduled reconcile: the next tick is the retry', () => {
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: Match.stringLikeRegexp('^ProjectorFunction') },
      MaximumRetryAttempts: 0,
      Qualifier: '$LATEST',
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      Targets: [Match.objectLike({ RetryPolicy: { MaximumRetryAttempts: 0 } })],
    });
  });

  it('passes the AwsSolutions checks that cdk synth runs', () => {
    const { stack, projector } = synth();
    projector();
    const app = stack.node.root as App;
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth({ force: true })).not.toThrow();
  });

  it('refuses a table without a stream', () => {
    const { projector } = synth({ stream: false });
    expect(projector).toThrow('the registry table has no stream');
  });
});

describe('projector stack options', () => {
  const node = (context: Record<string, unknown>) => new App({ context }).node;

  it('deploys no projector when no cluster is named', () => {
    expect(resolveProjectorOptions(node({}))).toBeUndefined();
  });

  it('reads the cluster, endpoint, CA, targets and schedule from context', () => {
    expect(
      resolveProjectorOptions(
        node({
          projectorClusterName: 'prod',
          projectorEndpoint: 'https://x.eks.amazonaws.com',
          projectorCertificateAuthority: 'QUJD',
          projectorTargets: 'linkerd,endpointslices',
          projectorScheduleMinutes: '10',
        }),
      ),
    ).toEqual({
      clusterName: 'prod',
      endpoint: 'https://x.eks.amazonaws.com',
      certificateAuthority: 'QUJD',
      targets: ['linkerd', 'endpointslices'],
      scheduleMinutes: 10,
    });
  });

  it("passes the cluster's ranges to the function, and names a bad one", () => {
    const context = {
      projectorClusterName: 'prod',
      projectorEndpoint: 'https://x.eks.amazonaws.com',
      projectorCertificateAuthority: 'QUJD',
    };
    expect(
      resolveProjectorOptions(
        node({ ...context, projectorClusterRanges: '172.20.0.0/16, 10.244.0.0/16' }),
      ),
    ).toMatchObject({ clusterRanges: '172.20.0.0/16,10.244.0.0/16' });
    expect(() =>
      resolveProjectorOptions(node({ ...context, projectorClusterRanges: '172.20.0.0' })),
    ).toThrow(
      "invalid projector option projectorClusterRanges '172.20.0.0': '172.20.0.0' must be a CIDR such as 10.0.0.0/16 or fd00::/64; give the cluster's pod and Service ranges as comma-separated CIDRs",
    );
    const template = synthTemplate({
      context: { ...context, projectorClusterRanges: '172.20.0.0/16' },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({ REGISTRAR_CLUSTER_RANGES: '172.20.0.0/16' }),
      },
    });
  });

  it('names the bad option and its value', () => {
    expect(() =>
      resolveProjectorOptions(
        node({
          projectorClusterName: 'prod',
          projectorEndpoint: 'http://x',
          projectorCertificateAuthority: 'QUJD',
          projectorTargets: 'consul',
        }),
      ),
    ).toThrow(
      /projectorEndpoint \(value 'http:\/\/x'\).*projectorTargets: invalid projection targets 'consul'/,
    );
  });
});
