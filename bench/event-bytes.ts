import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { EVENTS_KEPT, EVENTS_TRIM_AT } from '../lib/domain/entry-events.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { historyKey } from '../lib/store/dynamodb-entry-history.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { entryKey } from '../lib/store/item-codec.ts';
import { itemSize } from '../lib/store/item-size.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';

export interface EventBytes {
  what: string;
  bytes: number;
  /** Write units a write of an item this size costs (1 per KB, rounded up). */
  writeUnits: number;
}

/**
 * The bytes an entry's events add to its item (DynamoDB bills every later write of the entry by
 * the item's whole size, 1 WRU per KB started), measured on items written by the real store:
 * an entry as registered, after each health transition up to the trim length, and the history
 * item its deletion leaves.
 */
export async function measureEventBytes(): Promise<EventBytes[]> {
  const dynamo = await startDynalite();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const client = documentClientFor(raw);
  const tableName = 'bench-event-bytes';
  try {
    await ensureTable(raw, tableName);
    const store = composeRegistry(client, tableName);
    const ref = { namespace: 'bench', name: 'web-10.0.0.12' };
    const t0 = Date.now();
    await store.connect({
      entry: {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: {
          ...ref,
          uid: crypto.randomUUID(),
          labels: { app: 'web' },
          creationTimestamp: new Date(t0).toISOString(),
        },
        spec: {
          address: '10.0.0.12',
          ports: { http: 9080 },
          labels: { app: 'web' },
          serviceAccount: 'web',
        },
      },
      autoRegistrationGroup: 'web',
      origin: 'web|10.0.0.12|',
      healthChecksEnabled: true,
      groupGeneration: 1,
      connectionId: 'xIqZFO1zgYXfkgY=',
      connectedAt: t0,
      controller: 'workload-registrar',
      identity: { principal: 'token:4f1c2a9e8b7d', namespace: 'bench', serviceAccount: 'web' },
      mayCreate: true,
      recordConnection: false,
    });
    const size = async (key: { pk: string; sk: string }) => {
      const { Item } = await client.send(
        new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }),
      );
      return itemSize(Item ?? {});
    };
    const row = (what: string, bytes: number): EventBytes => ({
      what,
      bytes,
      writeUnits: Math.ceil(bytes / 1024),
    });
    const rows = [row('entry, registered (no event stored)', await size(entryKey(ref)))];
    for (let i = 1; i < EVENTS_TRIM_AT; i++) {
      await store.reportHealth({
        entry: ref,
        connectionId: 'xIqZFO1zgYXfkgY=',
        healthy: i % 2 === 0,
        at: t0 + i,
        ...(i % 2 === 0
          ? {}
          : { message: 'HTTP probe of http://localhost:9080/healthz failed: ECONNREFUSED' }),
      });
      if (i === 1 || i === EVENTS_KEPT || i === EVENTS_TRIM_AT - 1) {
        rows.push(
          row(`entry with ${i} health event${i === 1 ? '' : 's'}`, await size(entryKey(ref))),
        );
      }
    }
    const first = rows[0]?.bytes ?? 0;
    const full = rows.at(-1)?.bytes ?? 0;
    rows.push(
      row('per event (mean over the list)', Math.round((full - first) / (EVENTS_TRIM_AT - 1))),
    );
    await store.removeEntry(ref, { at: t0 + 1000 });
    const [history] = await store.deletedEntries(ref.namespace, ref.name, t0 + 1000);
    if (history) {
      rows.push(
        row(
          `history item of the deleted entry (${history.events.length} events)`,
          await size(historyKey(ref, history.deletedAt)),
        ),
      );
    }
    return rows;
  } finally {
    raw.destroy();
    await dynamo.close();
  }
}
