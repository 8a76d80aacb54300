/**
 * The conditional writes of the agent's own word about its VM: health reports and drain.
 * Kept apart from the holder writes (dynamodb-entry-writes.ts) so tests can pin each request.
 */
import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { drainingEvent, healthEvent } from '../domain/entry-events.ts';
import type { HolderRef } from '../domain/registry-records.ts';
import type { HealthReport } from '../registration/entry-lifecycle-store.ts';
import { withEntryEvent } from './dynamodb-entry-events.ts';
import { DRAINING_MESSAGE, entryKey } from './item-codec.ts';

/**
 * Health: set the `Healthy` condition without reading the entry first.
 * - `contains(conns, :connection)`: any connection that holds the entry reports for it (after
 *   a rotation or a reconnect, the surviving connection's reports count), and one that holds
 *   nothing controls nothing.
 * - `lastProbeTime < :at`: reports can arrive out of order (separate Lambda invocations); an
 *   older one never overwrites a newer one.
 * - `healthy<Status>Since = if_not_exists(...)` and REMOVE of the other status's one keep the
 *   transition time unchanged while the status stays, and reset it when the status changes.
 * - Two variants, tried in this order: a `refresh` (the status stays: `healthStatus =
 *   :status`), the common case (the agent repeats its state on every new connection, ~12 a
 *   day), and a transition (it changes), which records the Healthy or Unhealthy event in the
 *   same write. A transition so costs one failed write more; a refresh nothing.
 * - A cordon is not touched: the agent's health is kept beside it, and the entry shows False
 *   (Maintenance) until uncordon (effectiveHealth), whatever the agent reports meanwhile.
 */
export function healthUpdate(
  tableName: string,
  report: HealthReport,
  variant: 'refresh' | 'transition',
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
  const status =
    variant === 'refresh'
      ? ' AND healthStatus = :status'
      : ' AND (attribute_not_exists(healthStatus) OR healthStatus <> :status)';
  const input: UpdateCommandInput = {
    TableName: tableName,
    Key: entryKey(report.entry),
    UpdateExpression:
      `SET healthStatus = :status, lastProbeTime = :at, ${since} = if_not_exists(${since}, :at)` +
      (message ? ', healthMessage = :message' : '') +
      ` REMOVE ${other}${message ? '' : ', healthMessage'} ADD revision :one`,
    // A draining entry stays Healthy False until a new connect: a report that races the
    // drain (sent before it, processed after) must not put the VM back into the mesh.
    ConditionExpression:
      'contains(conns, :connection) AND (attribute_not_exists(lastProbeTime) OR lastProbeTime < :at)' +
      ` AND attribute_not_exists(drainingSince)${status}`,
    ExpressionAttributeValues: values,
  };
  if (variant === 'refresh') return input;
  return withEntryEvent(
    { ...input, ReturnValues: 'UPDATED_OLD' },
    healthEvent(report.at, report.healthy, report.message),
  );
}

/**
 * Drain (`{"action":"drain"}` from a holder): `Healthy` turns False with reason Draining, so
 * the mesh stops sending new requests before the agent closes. Idempotent: the first drain's
 * time stays (`if_not_exists`), and so does the time the status turned False. The probe time
 * is set only when there was none (a drain never moves it backwards). Only a holder may drain;
 * a new connect cancels it (connectAsNewest removes `drainingSince`). `first`: the variant
 * tried first, which records the Draining event only while the entry is not draining yet.
 */
export function drainUpdate(
  tableName: string,
  holder: HolderRef,
  at: number,
  first = false,
): UpdateCommandInput {
  const input: UpdateCommandInput = {
    TableName: tableName,
    Key: entryKey(holder.entry),
    UpdateExpression:
      'SET healthStatus = :false, healthMessage = :message, drainingSince = if_not_exists(drainingSince, :at),' +
      ' lastProbeTime = if_not_exists(lastProbeTime, :at), healthyFalseSince = if_not_exists(healthyFalseSince, :at)' +
      ' REMOVE healthyTrueSince ADD revision :one',
    ConditionExpression: 'contains(conns, :connection)',
    ExpressionAttributeValues: {
      ':false': 'False',
      ':message': DRAINING_MESSAGE,
      ':at': at,
      ':connection': holder.connectionId,
      ':one': 1,
    },
  };
  // The first drain records the Draining event; a repeated one (the agent sent it again
  // after a lost ack) changes nothing and records nothing.
  if (!first) return input;
  return withEntryEvent(
    {
      ...input,
      ConditionExpression: `${input.ConditionExpression} AND attribute_not_exists(drainingSince)`,
      ReturnValues: 'UPDATED_OLD',
    },
    drainingEvent(at),
  );
}
