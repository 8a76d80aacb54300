import type { UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { PARTITIONS } from './table-definition.ts';

/**
 * How many times a group's heartbeat annotations changed: one counter, bumped by every apply
 * that changes them (heartbeatChangeUpdate), read by the sweeper before each pass.
 */
export const HEARTBEAT_CHANGES_KEY = { pk: PARTITIONS.heartbeatChanges, sk: 'count' };

/**
 * The write `apply` (and the group sync) sends after a group's heartbeat annotations changed:
 * ADD, so two operators' applies both count, and no time is compared (the count only goes
 * up). Not part of the group's own write: a lost count costs at most a sweep interval (the
 * sweeper lists the groups once a run anyway).
 */
export function heartbeatChangeUpdate(tableName: string): UpdateCommandInput {
  return {
    TableName: tableName,
    Key: HEARTBEAT_CHANGES_KEY,
    UpdateExpression: 'ADD changes :one',
    ExpressionAttributeValues: { ':one': 1 },
  };
}
