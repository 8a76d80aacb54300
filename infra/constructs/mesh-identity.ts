import { Duration } from 'aws-cdk-lib';
import type { WebSocketApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { ConfigError, ENV } from '../../lib/config.ts';
import { MESH_ENV, readMeshSettings } from '../../lib/mesh-identity/mesh-settings.ts';
import { PROJECTOR_ENV } from '../../lib/projection/projector-config.ts';
import { SIDECAR_ACTION } from '../../lib/protocol/sidecar-message.ts';
import { PARTITIONS } from '../../lib/store/table-definition.ts';
import { type StackOptions, StackOptionsError } from '../stack-options.ts';
import type { ProjectorOptions } from './projector.ts';
import { RegistrarFunction } from './registrar-function.ts';
import { type PartitionAccess, partitionStatements } from './table-access.ts';
import { acknowledgeConnectionScopedAuth } from './websocket-api.ts';

export interface MeshIdentityProps {
  table: ITable;
  api: WebSocketApi;
  /** Lets the function close a connection over its budget of asks (DELETE @connections). */
  connections?: { url: string; grantClosing(grantee: IGrantable): void };
  /** The projector's cluster: the mesh function mints there, under its own role. */
  cluster: Pick<ProjectorOptions, 'clusterName' | 'endpoint' | 'certificateAuthority'>;
  options: Pick<StackOptions, 'authMode' | 'instanceAttestation'>;
  /** `REGISTRAR_MESH_*` settings from the stack options (resolveMeshOptions). */
  mesh: Record<string, string>;
  alarmTopic?: ITopic;
}

/**
 * What the mesh function reads in the registry, and nothing else: the entry (and in IAM mode
 * the connection's record, which says which entry it holds), and the caller's join token or
 * IAM allow rule, to refuse a revoked caller. It writes nothing.
 */
export function meshIdentityTableAccess(authMode: 'token' | 'iam'): PartitionAccess[] {
  return authMode === 'iam'
    ? [
        {
          actions: ['GetItem'],
          partitions: [PARTITIONS.namespaces, PARTITIONS.connections, PARTITIONS.policies],
        },
      ]
    : [{ actions: ['GetItem'], partitions: [PARTITIONS.namespaces, PARTITIONS.tokens] }];
}

/**
 * The `sidecar` route and its own function (functions/mesh-identity.ts): a VM's sidecar
 * bootstrap and a short-lived ServiceAccount token for its entry's service account. Apart from
 * the message function on purpose: only this function's role is mapped (an EKS access entry)
 * to the Kubernetes group whose RBAC allows `create` on `serviceaccounts/token`
 * (docs/kubernetes.md). Its AWS role holds no EKS permission (none is needed to call the
 * cluster's API) and no write to the registry.
 */
export class MeshIdentity extends Construct {
  readonly function: NodejsFunction;
  readonly alarm: Alarm;

  constructor(scope: Construct, id: string, props: MeshIdentityProps) {
    super(scope, id);
    const built = new RegistrarFunction(this, 'Function', {
      name: 'mesh-identity',
      entry: 'functions/mesh-identity.ts',
      description:
        'workload-registrar mesh identity: mints ServiceAccount tokens for held entries (EKS access entry)',
      // One GetItem or two, one TokenRequest and (cached) one ConfigMap read.
      timeout: Duration.seconds(10),
      environment: {
        [ENV.tableName]: props.table.tableName,
        [ENV.authMode]: props.options.authMode,
        ...(props.options.instanceAttestation === undefined
          ? {}
          : { [ENV.instanceAttestation]: props.options.instanceAttestation }),
        [PROJECTOR_ENV.clusterName]: props.cluster.clusterName,
        [PROJECTOR_ENV.endpoint]: props.cluster.endpoint,
        [PROJECTOR_ENV.certificateAuthority]: props.cluster.certificateAuthority,
        ...props.mesh,
        ...(props.connections ? { [ENV.connectionsUrl]: props.connections.url } : {}),
      },
    });
    this.function = built.function;
    props.connections?.grantClosing(this.function);
    for (const statement of partitionStatements(
      props.table.tableArn,
      meshIdentityTableAccess(props.options.authMode),
    )) {
      built.role.addToPrincipalPolicy(statement);
    }
    const route = props.api.addRoute(SIDECAR_ACTION, {
      integration: new WebSocketLambdaIntegration('Sidecar', this.function),
      returnResponse: true,
    });
    acknowledgeConnectionScopedAuth(route);

    // Refusals are replies; a fault (the cluster unreachable, RBAC missing) fails the
    // invocation's answer with a 500, counted as a Lambda error only when it throws.
    this.alarm = new Alarm(this, 'ErrorsAlarm', {
      metric: this.function.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription:
        'The mesh identity function failed (timeout, crash): VMs cannot refresh their mesh identity; its logs say why.',
    });
    if (props.alarmTopic) {
      this.alarm.addAlarmAction(new SnsAction(props.alarmTopic));
      this.alarm.addOkAction(new SnsAction(props.alarmTopic));
    }
  }
}

/** Stack options (`cdk deploy -c meshTokenLifetime=30m`) -> the function's variables. */
export const MESH_OPTION_KEYS = {
  meshTokenAudience: MESH_ENV.tokenAudience,
  meshTokenLifetime: MESH_ENV.tokenLifetime,
  meshDiscoveryAddress: MESH_ENV.discoveryAddress,
  meshIstiodAddress: MESH_ENV.istiodAddress,
  meshTrustDomain: MESH_ENV.trustDomain,
  meshClusterId: MESH_ENV.clusterId,
  meshId: MESH_ENV.meshId,
} as const;

/**
 * The mesh settings from context, validated at synth (the same rules the function applies at
 * start), so a bad value fails before anything is deployed, naming the option.
 */
/**
 * The mesh options configure the sidecar bootstrap, which mints in the projector's cluster: set
 * without the projector they would be ignored, so the synth refuses them, naming the first.
 */
export function refuseMeshOptionsWithoutCluster(node: Construct['node']): undefined {
  for (const option of Object.keys(MESH_OPTION_KEYS)) {
    const value = node.tryGetContext(option);
    if (value === undefined || value === '') continue;
    throw new StackOptionsError(
      `invalid mesh option ${option} (value '${String(value)}'): applies only with the projector, which the sidecar bootstrap mints in; set projectorClusterName, projectorEndpoint and projectorCertificateAuthority (docs/kubernetes.md)`,
    );
  }
  return undefined;
}

export function resolveMeshOptions(node: Construct['node']): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [option, variable] of Object.entries(MESH_OPTION_KEYS)) {
    const value = node.tryGetContext(option);
    if (value !== undefined && value !== '') env[variable] = String(value);
  }
  try {
    readMeshSettings(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    let message = error.message.replace('invalid mesh configuration', 'invalid mesh option');
    for (const [option, variable] of Object.entries(MESH_OPTION_KEYS)) {
      message = message.replaceAll(variable, option);
    }
    throw new StackOptionsError(message);
  }
  return env;
}
