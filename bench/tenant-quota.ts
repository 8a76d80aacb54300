import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local-server.ts';
import { cellKey } from '../lib/domain/disruption.ts';
import { effectiveLimits } from '../lib/domain/namespace-settings.ts';
import { NamespaceLimits } from '../lib/registration/namespace-limits.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { DynamoDbConnectRate } from '../lib/store/dynamodb-connect-rate.ts';
import { zoneCountUpdate } from '../lib/store/dynamodb-entry-writes.ts';
import { DynamoDbNamespaceSettings } from '../lib/store/dynamodb-namespace-settings.ts';
import { DynamoDbNamespaceUsage } from '../lib/store/dynamodb-namespace-usage.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { zoneShardOf } from '../lib/store/table-definition.ts';

export interface QuotaStormResult {
  scenario: string;
  connects: number;
  admitted: number;
  refused: number;
  /** The quota's own requests (settings, live count, rate counter), per connect. */
  readsPerConnect: number;
  writesPerConnect: number;
  /** The most writes one partition key took in one simulated second, and which key. */
  maxWritesPerKeySecond: number;
  hottestKey: string;
  /** Simulated function instances the connects were spread over. */
  instances: number;
  backend: string;
}

export interface QuotaStormOptions {
  vms: number;
  /** Connects per second API Gateway admits (its default account quota). */
  perSecond?: number;
  /** Function instances of $connect (concurrency at 500/s and ~100 ms a connect). */
  instances?: number;
  /** The namespace's connect rate (undefined: the default). */
  connectRate?: number;
  backend?: 'dynalite' | 'dynamodb-local';
  log?: (line: string) => void;
}

/**
 * A reconnect storm of one namespace through the connect path's quota code, on a simulated
 * clock: `vms` connects arriving at API Gateway's 500/s, spread over `instances` function
 * instances (each with its own caches, as Lambda instances have), against a real store. Each
 * connect reads the namespace's settings and live count through the instance's cache and
 * counts itself against the connect rate, as $connect does; the connects it lets in move the
 * namespace's cell counter as their entry writes would. Requests of the quota code are counted
 * on its own client, and every write is attributed to its partition key and simulated second.
 */
export async function measureQuotaStorm(options: QuotaStormOptions): Promise<QuotaStormResult> {
  const perSecond = options.perSecond ?? 500;
  const instances = options.instances ?? 50;
  const backend = options.backend ?? 'dynamodb-local';
  const dynamo = backend === 'dynalite' ? await startDynalite() : await startDynamoDbLocal();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const table = `quota-${randomUUID()}`;
  const quotaClient = documentClientFor(raw);
  const counter = countRequests(quotaClient);
  const entryClient = documentClientFor(
    createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint }),
  );
  const namespace = 'storm';
  try {
    await ensureTable(raw, table);
    const settings = new DynamoDbNamespaceSettings(quotaClient, table);
    if (options.connectRate !== undefined) {
      await settings.updateSettings(
        namespace,
        { set: { connectRate: options.connectRate }, unset: [] },
        0,
      );
    }
    counter.reset();
    const functions = Array.from(
      { length: instances },
      () =>
        new NamespaceLimits({
          settings,
          usage: new DynamoDbNamespaceUsage(quotaClient, table),
          rate: new DynamoDbConnectRate(quotaClient, table),
          settingsCacheMs: 30_000,
        }),
    );
    const writes = new Map<string, number>();
    let admitted = 0;
    let refused = 0;
    const start = 1_767_225_600_000;
    for (let first = 0; first < options.vms; first += perSecond) {
      const batch = Math.min(perSecond, options.vms - first);
      const second = first / perSecond;
      const seen = counter.requests().length;
      const connect = async (vm: number, limits: NamespaceLimits) => {
        const at = start + second * 1000 + Math.floor(((vm - first) * 1000) / batch);
        const effective = effectiveLimits(await limits.settings(namespace, at));
        await limits.connected(namespace, at, effective);
        if (!(await limits.admit(namespace, effective.connectRate, at, `c-${vm}`))) {
          refused += 1;
          return;
        }
        admitted += 1;
        // The entry write's own counter move (fail static's), not the quota's: not counted.
        const name = `web-${vm}`;
        const update = zoneCountUpdate(
          table,
          cellKey(namespace, 'us-east-1/us-east-1a'),
          zoneShardOf({ namespace, name }),
          { connected: 1 },
          `connect:${name}`,
        );
        if (update) await entryClient.send(new UpdateCommand(update));
      };
      // A Lambda instance runs one invocation at a time: each instance takes its connects of
      // the second in order, the instances side by side.
      await Promise.all(
        functions.map(async (limits, instance) => {
          for (let vm = first + instance; vm < first + batch; vm += instances) {
            await connect(vm, limits);
          }
        }),
      );
      for (const request of counter.requests().slice(seen)) {
        if (request.command !== 'UpdateItem' && request.command !== 'PutItem') continue;
        const key = String((request.input.Key as { pk?: string } | undefined)?.pk);
        const slot = `${key}@${second}`;
        writes.set(slot, (writes.get(slot) ?? 0) + 1);
      }
      if (second % 50 === 0) options.log?.(`${first + batch} of ${options.vms} connects`);
    }
    const counts = counter.counts();
    const reads = (counts.GetItem ?? 0) + (counts.Query ?? 0);
    const written = (counts.UpdateItem ?? 0) + (counts.PutItem ?? 0);
    let hottest = ['', 0] as [string, number];
    for (const [slot, count] of writes) if (count > hottest[1]) hottest = [slot, count];
    return {
      scenario:
        options.connectRate === undefined
          ? 'default quotas'
          : `connect-rate ${options.connectRate}/s`,
      connects: options.vms,
      admitted,
      refused,
      readsPerConnect: round(reads / options.vms),
      writesPerConnect: round(written / options.vms),
      maxWritesPerKeySecond: hottest[1],
      hottestKey: hottest[0].split('@')[0] ?? '',
      instances,
      backend,
    };
  } finally {
    raw.destroy();
    entryClient.destroy();
    await dynamo.close();
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
