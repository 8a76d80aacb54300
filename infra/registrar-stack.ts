import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { ENV } from '../lib/config.ts';
import { ApiGatewayLogsRole } from './constructs/api-gateway-logs-role.ts';
import { InstanceStateRule } from './constructs/instance-state-rule.ts';
import {
  MeshIdentity,
  refuseMeshOptionsWithoutCluster,
  resolveMeshOptions,
} from './constructs/mesh-identity.ts';
import { Monitoring } from './constructs/monitoring.ts';
import { Projector, resolveProjectorOptions } from './constructs/projector.ts';
import { RegistrarFunctions } from './constructs/registrar-functions.ts';
import { RegistryTable } from './constructs/registry-table.ts';
import { RolloutSchedule } from './constructs/rollout-schedule.ts';
import { SweeperSchedule } from './constructs/sweeper-schedule.ts';
import { RegistrarWebSocketApi } from './constructs/websocket-api.ts';
import { resolveGroupSource } from './group-source-option.ts';
import { resolveStackOptions, type StackOptionsInput } from './stack-options.ts';

export interface RegistrarStackProps extends StackProps {
  /** Overrides the context options (`cdk deploy -c <option>=<value>`). */
  options?: StackOptionsInput;
}

/** The deployed registrar: composes one construct per concern and nothing else. */
export class RegistrarStack extends Stack {
  constructor(scope: Construct, id: string, props: RegistrarStackProps = {}) {
    super(scope, id, props);
    const options = resolveStackOptions(this.node, props.options);
    // Every option is validated before anything is built: a bad one fails in a line, at once.
    // The Kubernetes projection is opt-in: -c projectorClusterName=... (docs/kubernetes.md).
    const projector = resolveProjectorOptions(this.node);
    const groups = resolveGroupSource(this.node, projector !== undefined);
    const mesh = projector
      ? resolveMeshOptions(this.node)
      : refuseMeshOptionsWithoutCluster(this.node);

    const registry = new RegistryTable(this, 'Registry');
    const functions = new RegistrarFunctions(this, 'Functions', { registry, options });
    const sweep = new SweeperSchedule(this, 'Sweep', { registry, options });
    const rollout = new RolloutSchedule(this, 'Rollout', {
      registry,
      options,
      groupSource: groups.source,
    });
    const instances = new InstanceStateRule(this, 'InstanceState', { registry, options });
    const websocket = new RegistrarWebSocketApi(this, 'WebSocket', {
      options,
      connect: functions.connect,
      disconnect: functions.disconnect,
      message: functions.message,
      authorize: functions.authorize,
    });
    // Liveness checks (GET @connections/{id}): disconnect asks about the entry's other holders,
    // the sweeper about every holder once per liveness interval. Message only reads the URL
    // (configuration is read the same way everywhere) and DELETE alone, to close a connection
    // over its message budget (lib/domain/message-budget.ts).
    for (const fn of [functions.disconnect, functions.message, sweep.sweeper, rollout.function]) {
      fn.addEnvironment(ENV.connectionsUrl, websocket.connectionsUrl);
    }
    websocket.grantConnectionLookups(functions.disconnect);
    websocket.grantConnectionLookups(sweep.sweeper);
    // The sweeper closes a connection found silent past its group's heartbeat (issue 35).
    websocket.grantConnectionClosing(sweep.sweeper);
    // It tells a live agent its group's changed heartbeat (POST), which the agent acknowledges.
    websocket.grantConnectionNotices(sweep.sweeper);
    // A connection over its message budget is closed by the function that counted it.
    websocket.grantConnectionClosing(functions.message);
    websocket.grantConnectionClosing(rollout.function);
    if (options.apiGatewayLogsRole) {
      // Access logging fails to deploy until the account names a logs role.
      const logsRole = new ApiGatewayLogsRole(this, 'ApiGatewayLogs');
      websocket.stage.node.addDependency(logsRole.account);
    }
    const monitoring = new Monitoring(this, 'Monitoring', {
      functions: [
        ...functions.all,
        { name: 'ec2StateChange', fn: instances.function },
        { name: 'rollout', fn: rollout.function },
      ],
      sweeper: sweep.sweeper,
      sweepRateMinutes: options.sweepRateMinutes,
      api: websocket.api,
      stage: websocket.stage,
      alarmEmail: options.alarmEmail,
      instanceEventDeadLetters: instances.deadLetters,
    });
    if (projector) {
      new Projector(this, 'Projector', {
        table: registry.table,
        ...projector,
        alarmTopic: monitoring.topic,
        groupSource: groups.source,
        groupSyncMinutes: groups.syncMinutes,
      });
      // The sidecar bootstrap mints in the projector's cluster, from a function of its own.
      new MeshIdentity(this, 'MeshIdentity', {
        table: registry.table,
        api: websocket.api,
        connections: {
          url: websocket.connectionsUrl,
          grantClosing: (grantee) => websocket.grantConnectionClosing(grantee),
        },
        cluster: projector,
        options,
        mesh: mesh ?? {},
        alarmTopic: monitoring.topic,
      });
    }

    new CfnOutput(this, 'WebSocketUrl', {
      description: 'Agents connect here (registrar-agent --url)',
      value: websocket.stage.url,
    });
    new CfnOutput(this, 'ManagementEndpoint', {
      description:
        'API Gateway management endpoint (@connections): registrar delete --management-endpoint, or REGISTRAR_CONNECTIONS_URL, closes the connections of deleted entries so their agents register again at once; needs execute-api:ManageConnections',
      value: websocket.connectionsUrl,
    });
    new CfnOutput(this, 'TableName', {
      description: 'The registry table (registrar --table)',
      value: registry.table.tableName,
    });
    new CfnOutput(this, 'DashboardUrl', {
      description: 'The CloudWatch dashboard',
      value: `https://${this.region}.console.aws.amazon.com/cloudwatch/home?region=${this.region}#dashboards:name=${monitoring.dashboard.dashboardName}`,
    });
    new CfnOutput(this, 'AlarmTopicArn', {
      description: 'Subscribe more endpoints to receive alarms',
      value: monitoring.topic.topicArn,
    });
    if (options.authMode === 'iam') {
      new CfnOutput(this, 'ConnectRouteArn', {
        description: 'IAM mode: allow execute-api:Invoke on this ARN in the EC2 instance role',
        value: this.formatArn({
          service: 'execute-api',
          resource: websocket.api.apiId,
          resourceName: `${options.stageName}/$connect`,
        }),
      });
    }
  }
}
