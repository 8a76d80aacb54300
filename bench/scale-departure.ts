import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { ObjectRef } from '../lib/domain/model.ts';
import type { RegistrarStore } from '../lib/registrar-store.ts';
import { entryKey, sweepShard, sweepState } from '../lib/store/item-codec.ts';
import { itemSize } from '../lib/store/item-size.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { inBatches } from './bench-entries.ts';

export interface DepartureLoad {
  /** The most write units one partition key took in one second. */
  maxWcuPerSecond: number;
  /** That key (`NS#<namespace>`, a counter key, or `index <sweepState>` for the index). */
  hottestKey: string;
  /** The hottest key of each kind. */
  byKind: { entries: number; index: number; counters: number };
  /** After every VM left: the cell counters say 0 connected and every one away. */
  countersExact: boolean;
}

/**
 * Every VM's last connection drops within one simulated minute (an AZ event), in an order
 * unrelated to namespaces: the real `leave` write for each, counted on the wire per partition
 * key and simulated second, in WCU by item size (an update costs the larger of the item before
 * and after; the entry's size is read from the table). The sweep index (projection ALL) is
 * written too when an entry's index key moves: out of its connected shard `C#<shard>`, into its
 * namespace's `D#<namespace>#<shard>`, each the entry's size.
 */
export async function measureMassDeparture(
  client: DynamoDBDocumentClient,
  store: RegistrarStore,
  tableName: string,
  vms: readonly { ref: ObjectRef; connectionId: string }[],
  at: number,
): Promise<DepartureLoad> {
  const order = vms
    .map((_, i) => i)
    .sort((a, b) => ((a * 7919) % vms.length) - ((b * 7919) % vms.length));
  const sample = await client.send(
    new GetCommand({ TableName: tableName, Key: entryKey((vms[0] as { ref: ObjectRef }).ref) }),
  );
  const entryWcu = Math.ceil(itemSize(sample.Item ?? {}) / 1024);
  const counter = countRequests(client);
  const secondOf = new Map<string, number>();
  await inBatches(order.length, 64, async (k) => {
    const vm = vms[order[k] as number] as { ref: ObjectRef; connectionId: string };
    const second = Math.floor((k * 60) / order.length);
    secondOf.set(`${vm.ref.namespace}/${vm.ref.name}`, second);
    await store.leave({
      connectionId: vm.connectionId,
      entry: vm.ref,
      at: at + second * 1000,
      departure: 'abnormal',
    });
  });
  // An entry write's second is its VM's; a counter write names the entry whose transition it
  // counts in its `:op` (`<ns>/<name>@<rev>:...`).
  const wcu = new Map<string, number>();
  let currentSecond = 0;
  const charge = (key: string, units: number) => {
    const slot = `${key}@${currentSecond}`;
    wcu.set(slot, (wcu.get(slot) ?? 0) + units);
  };
  for (const { command, input } of counter.requests()) {
    if (!['UpdateItem', 'PutItem', 'DeleteItem'].includes(command)) continue;
    const key = input.Key as { pk?: string; sk?: string } | undefined;
    const pk = key?.pk ?? String((input.Item as { pk?: string } | undefined)?.pk);
    const values = input.ExpressionAttributeValues as Record<string, unknown> | undefined;
    if (pk.startsWith('NS#')) {
      const name = String(key?.sk).slice(3);
      currentSecond = secondOf.get(`${pk.slice(3)}/${name}`) ?? currentSecond;
      charge(pk, entryWcu);
      const state = values?.[':sweepState'];
      if (typeof state === 'string' && state.startsWith('D#')) {
        charge(`index ${state}`, entryWcu);
        charge(`index ${sweepState('C', sweepShard({ namespace: pk.slice(3), name }))}`, entryWcu);
      }
      continue;
    }
    const op = values?.[':op'];
    if (pk.startsWith('ZONE') && typeof op === 'string') {
      currentSecond = secondOf.get(op.slice(0, op.indexOf('@'))) ?? currentSecond;
    }
    charge(pk, 1);
  }
  let hottest = ['', 0] as [string, number];
  const byKind = { entries: 0, index: 0, counters: 0 };
  for (const [slot, units] of wcu) {
    if (units > hottest[1]) hottest = [slot, units];
    const kind = slot.startsWith('NS#')
      ? 'entries'
      : slot.startsWith('index')
        ? 'index'
        : 'counters';
    byKind[kind] = Math.max(byKind[kind], units);
  }
  const zones = await store.zoneCounts();
  const connected = zones.reduce((sum, z) => sum + z.connected, 0);
  const away = zones.reduce((sum, z) => sum + z.away, 0);
  return {
    maxWcuPerSecond: hottest[1],
    hottestKey: hottest[0].replace(/@\d+$/, ''),
    byKind,
    countersExact: connected === 0 && away === vms.length,
  };
}
