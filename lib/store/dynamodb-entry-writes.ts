/**
 * The conditional writes of the lifecycle, as request inputs. Each condition is the rule it
 * enforces; the store sends them and turns a failed condition into an outcome. Kept apart from
 * the store so tests can pin the exact request (ConditionExpression included).
 */
import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { ObjectRef } from '../domain/model.ts';
import { entryKey, sweepShard, sweepState } from './item-codec.ts';
import type { ConnectChange, HealthReport } from './registry-store.ts';

/**
 * Connect: create the entry from the template, or refresh only its connection state.
 * - Template fields use `if_not_exists`: a reconnect never rewrites spec, labels or status.
 * - `ADD conns`: during a make-before-break rotation the old connection stays listed, so its
 *   late `$disconnect` cannot mark the entry disconnected while the new one holds it.
 * - Condition `attribute_not_exists(pk)`: a new entry; otherwise it must be auto-registered
 *   (a hand-made entry is never overwritten) and this connect newer than both the recorded
 *   connect and disconnect: API Gateway may run an older `$connect` Lambda after a newer event
 *   (retries, cold starts), and an older connect must change nothing.
 * - UPDATED_OLD returns the old `revision` only when the entry existed: created vs reconnected.
 */
export function connectUpdate(tableName: string, change: ConnectChange): UpdateCommandInput {
  const ref: ObjectRef = change.entry.metadata;
  return {
    TableName: tableName,
    Key: entryKey(ref),
    UpdateExpression: [
      'SET #entry = if_not_exists(#entry, :entry)',
      'autoRegistrationGroup = if_not_exists(autoRegistrationGroup, :group)',
      'healthChecksEnabled = if_not_exists(healthChecksEnabled, :healthChecksEnabled)',
      'groupGeneration = if_not_exists(groupGeneration, :groupGeneration)',
      '#identity = :identity, controller = :controller, connectedAt = :at',
      'newestConnectionId = :connection, sweepState = :sweepState, sweepAt = :at',
    ]
      .join(', ')
      .concat(' REMOVE disconnectedAt ADD conns :connections, revision :one'),
    ConditionExpression:
      'attribute_not_exists(pk) OR (attribute_exists(autoRegistrationGroup)' +
      ' AND (attribute_not_exists(connectedAt) OR connectedAt < :at)' +
      ' AND (attribute_not_exists(disconnectedAt) OR disconnectedAt < :at))',
    ExpressionAttributeNames: { '#entry': 'entry', '#identity': 'identity' },
    ExpressionAttributeValues: {
      ':entry': change.entry,
      ':group': change.autoRegistrationGroup,
      ':healthChecksEnabled': change.healthChecksEnabled,
      ':groupGeneration': change.groupGeneration,
      ':identity': change.identity,
      ':controller': change.controller,
      ':at': change.connectedAt,
      ':connection': change.connectionId,
      ':sweepState': sweepState('C', sweepShard(ref)),
      ':connections': new Set([change.connectionId]),
      ':one': 1,
    },
    ReturnValues: 'UPDATED_OLD',
  };
}

/**
 * Disconnect of the entry's only live connection: mark it disconnected (keeping
 * `workloadController`) and move it to the disconnected sweep shard, keyed by the time.
 * Condition: this connection is the only one listed. While another holds the entry (make before
 * break) it fails and `disconnectOneOfMany` runs instead.
 */
export function disconnectSoleUpdate(
  tableName: string,
  ref: ObjectRef,
  connectionId: string,
  at: number,
): UpdateCommandInput {
  return {
    TableName: tableName,
    Key: entryKey(ref),
    UpdateExpression:
      'SET disconnectedAt = :at, sweepState = :sweepState, sweepAt = :at' +
      ' REMOVE connectedAt DELETE conns :connections ADD revision :one',
    ConditionExpression: 'size(conns) = :one AND contains(conns, :connection)',
    ExpressionAttributeValues: {
      ':at': at,
      ':sweepState': sweepState('D', sweepShard(ref)),
      ':connections': new Set([connectionId]),
      ':connection': connectionId,
      ':one': 1,
    },
  };
}

/**
 * Disconnect of one of several live connections: only forget this one; the entry stays
 * connected. `size(conns) > 1` guards the race of two connections closing at once: without it
 * both could take this path and leave an entry that no connection holds still marked connected.
 */
export function disconnectOneOfManyUpdate(
  tableName: string,
  ref: ObjectRef,
  connectionId: string,
): UpdateCommandInput {
  return {
    TableName: tableName,
    Key: entryKey(ref),
    UpdateExpression: 'DELETE conns :connections ADD revision :one',
    ConditionExpression: 'size(conns) > :one AND contains(conns, :connection)',
    ExpressionAttributeValues: {
      ':connections': new Set([connectionId]),
      ':connection': connectionId,
      ':one': 1,
    },
  };
}

/**
 * Health: set the `Healthy` condition without reading the entry first.
 * - Condition `newestConnectionId = :connection`: after a make-before-break reconnect the old
 *   connection's last reports must not win over the new one's.
 * - Condition `lastProbeTime < :at`: reports can arrive out of order (separate Lambda
 *   invocations); an older one never overwrites a newer one.
 * - `healthy<Status>Since = if_not_exists(...)` and REMOVE of the other status's one keep the
 *   transition time unchanged while the status stays, and reset it when the status changes.
 * - UPDATED_OLD returns the previous `healthStatus`: transitioned vs refreshed.
 */
export function healthUpdate(
  tableName: string,
  ref: ObjectRef,
  report: HealthReport,
): UpdateCommandInput {
  const since = report.healthy ? 'healthyTrueSince' : 'healthyFalseSince';
  const other = report.healthy ? 'healthyFalseSince' : 'healthyTrueSince';
  // The message describes a failure: it is kept only while unhealthy.
  const message = !report.healthy && report.message !== undefined;
  const values: Record<string, unknown> = {
    ':status': report.healthy ? 'True' : 'False',
    ':at': report.at,
    ':connection': report.connectionId,
    ':one': 1,
  };
  if (message) values[':message'] = report.message;
  return {
    TableName: tableName,
    Key: entryKey(ref),
    UpdateExpression:
      `SET healthStatus = :status, lastProbeTime = :at, ${since} = if_not_exists(${since}, :at)` +
      (message ? ', healthMessage = :message' : '') +
      ` REMOVE ${other}${message ? '' : ', healthMessage'} ADD revision :one`,
    ConditionExpression:
      'newestConnectionId = :connection AND (attribute_not_exists(lastProbeTime) OR lastProbeTime < :at)',
    ExpressionAttributeValues: values,
    ReturnValues: 'UPDATED_OLD',
  };
}
