import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local-server.ts';
import { servingState } from '../lib/projection/serving.ts';
import { createDynamoDbClient } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { startManagementApiStandIn } from './management-api-stand-in.ts';
import { BenchFleet, MINUTE } from './scale-fleet.ts';

/**
 * A full 2-hour rotation of a fleet, simulated minute by minute: every agent reconnects make
 * before break (its new connection's `$connect`, then the old one's `$disconnect`, through the
 * real handlers) within 108 minutes, and the deployed sweeper handler runs every minute
 * against the management API stand-in. Counted: entries created or deleted (the churn, which
 * must be 0: a rotation is a reconnect of the same entry) and entries the mesh would not route
 * to when each minute ends (must be 0: a rotation never blips). Each VM rotates when its
 * connection is 90 to 108 minutes old, as agents do (below API Gateway's 2 h limit): over 120
 * simulated minutes every VM rotates at least once.
 */
export interface RotationChurn {
  vms: number;
  minutes: number;
  rotations: number;
  created: number;
  deleted: number;
  uidsChanged: number;
  unroutableMinuteEnds: number;
  wallSeconds: number;
}

export async function measureRotationChurn(
  vms = 10_000,
  options: { backend?: 'dynamodb-local' | 'dynalite' } = {},
): Promise<RotationChurn> {
  const started = performance.now();
  const dynamo =
    options.backend === 'dynamodb-local' ? await startDynamoDbLocal() : await startDynalite();
  const raw: DynamoDBClient = createDynamoDbClient({
    region: 'us-east-1',
    endpoint: dynamo.endpoint,
  });
  const standIn = await startManagementApiStandIn(25);
  const tableName = 'rotation-churn';
  try {
    await ensureTable(raw, tableName);
    const start = Date.UTC(2026, 10, 27, 12);
    const fleet = new BenchFleet(dynamo.endpoint, tableName, standIn, start);
    // Connect times spread over the last 108 minutes, so the rotations spread over the run.
    await fleet.seed(
      [{ namespace: 'fleet', vms }],
      (i) => start - 1 - Math.floor((((i * 7919) % vms) / vms) * 108 * MINUTE),
    );
    const before = new Map(
      (await fleet.store.listEntries('fleet')).map((r) => [
        r.entry.metadata.name,
        r.entry.metadata.uid,
      ]),
    );
    const rotated = new Map<string, number>();
    const minutes = 120;
    let deleted = 0;
    let unroutableMinuteEnds = 0;
    for (let run = 1; run <= minutes; run += 1) {
      const now = start + run * MINUTE;
      const measured = await fleet.minute(
        run,
        now,
        rotated,
        (vm) => now - vm.connectedAt >= (90 + (vm.index % 19)) * MINUTE,
      );
      deleted += measured.summary?.deleted ?? 0;
      if (run % 10 === 0) {
        const entries = await fleet.store.listEntries('fleet');
        unroutableMinuteEnds += entries.filter((r) => !servingState(r).ready).length;
      }
    }
    const after = await fleet.store.listEntries('fleet');
    const created = after.filter((r) => !before.has(r.entry.metadata.name)).length;
    const uidsChanged = after.filter(
      (r) =>
        before.has(r.entry.metadata.name) &&
        before.get(r.entry.metadata.name) !== r.entry.metadata.uid,
    ).length;
    const missing = [...before.keys()].filter(
      (name) => !after.some((r) => r.entry.metadata.name === name),
    ).length;
    fleet.close();
    return {
      vms,
      minutes,
      rotations: rotated.size,
      created,
      // What the sweeper said it deleted, or what is missing from the table: the larger.
      deleted: Math.max(deleted, missing),
      uidsChanged,
      unroutableMinuteEnds,
      wallSeconds: Math.round((performance.now() - started) / 1000),
    };
  } finally {
    await standIn.close();
    raw.destroy();
    await dynamo.close();
  }
}
