/**
 * The lifecycle under failed writes: random stories of one VM, as in lifecycle.property.test.ts,
 * where any DynamoDB request may fail before it is applied, fail after it is applied (the
 * caller sees an error for a change that landed), or lose its response and be sent again (what
 * the SDK does on a timeout). A failed `$connect` refuses the upgrade; a failed `$disconnect`
 * is not retried by API Gateway; a failed health report is sent again by the agent. No model
 * predicts the exact state here; the promises must hold all the same:
 * - every open connection whose connect succeeded holds the entry, which is connected;
 * - health never goes backwards;
 * - once every holder is closed and a liveness check that succeeded has seen them gone, the
 *   entry is deleted by the first sweep after the grace period.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ISTIO_API_VERSION } from '../../lib/domain/model.ts';
import type { SweepPolicy } from '../../lib/domain/sweep-policy.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import { runSweep } from '../../lib/registration/sweep.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const policy: SweepPolicy = { gracePeriodMs: 5 * MINUTE, maxConnectionAgeMs: 2 * HOUR };
const NS = 'faults';

type Fault = 'none' | 'before' | 'after' | 'resent';

type Op =
  | { kind: 'connect'; delay: number }
  | { kind: 'close'; pick: number; lose: boolean }
  | { kind: 'health'; pick: number; healthy: boolean }
  | { kind: 'liveness' }
  | { kind: 'sweep' }
  | { kind: 'advance'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('connect' as const),
      delay: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3 })),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('close' as const),
      pick: fc.nat(),
      lose: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('health' as const),
      pick: fc.nat(),
      healthy: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('liveness' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('sweep' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(
        fc.integer({ min: 1, max: 2_000 }),
        fc.integer({ min: 4 * MINUTE, max: 6 * MINUTE }),
      ),
    }),
  },
);

/** One fault per request, in order; past the end, none. */
const faults = fc.array(
  fc.oneof(
    { weight: 6, arbitrary: fc.constant<Fault>('none') },
    { weight: 1, arbitrary: fc.constant<Fault>('before') },
    { weight: 1, arbitrary: fc.constant<Fault>('after') },
    { weight: 1, arbitrary: fc.constant<Fault>('resent') },
  ),
  { maxLength: 200 },
);

interface Connection {
  id: string;
  connectedAt: number;
  live: boolean;
  closedAt?: number;
  /** Its `$disconnect` landed (returned without error). */
  left: boolean;
}

let dynamo: TestDynamo;
let run = 0;

beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

/**
 * The document client with faults injected at the boundary the store sees: 'before' fails
 * without sending, 'after' sends then fails, 'resent' sends twice and answers the second
 * (a response lost on the way back, then the SDK's retry).
 */
function faulty(client: DynamoDBDocumentClient, schedule: Fault[]): DynamoDBDocumentClient {
  let next = 0;
  const send = async (command: Parameters<DynamoDBDocumentClient['send']>[0]) => {
    const fault = schedule[next++] ?? 'none';
    if (fault === 'before') throw new Error('injected: failed before it was applied');
    // biome-ignore lint/suspicious/noExplicitAny: the command's own output type is kept by send.
    const output = await client.send(command as any);
    if (fault === 'after') throw new Error('injected: failed after it was applied');
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    if (fault === 'resent') return client.send(command as any);
    return output;
  };
  return new Proxy(client, {
    get: (target, key) => (key === 'send' ? send : Reflect.get(target, key)),
  });
}

it('keeps its promises when writes fail before or after they land, or are sent twice', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(op, { minLength: 4, maxLength: 40, size: 'medium' }),
      faults,
      async (ops, schedule) => {
        run += 1;
        await tellStory(run, ops, schedule);
      },
    ),
    { numRuns: 80 },
  );
  // Each sweep also reads its namespace's own departure keys (the fair sweeper): ~20 requests
  // where it made 12; on a loaded 2-core machine the runs took up to ~95 s of the 120 s.
}, 240_000);

async function tellStory(story: number, ops: Op[], schedule: Fault[]): Promise<void> {
  const store = composeRegistry(faulty(dynamo.client, schedule), dynamo.tableName);
  const reader = composeRegistry(dynamo.client, dynamo.tableName);
  let now = Date.UTC(2025, 0, 1) + story * 30 * 24 * HOUR;
  const ref = { namespace: NS, name: `vm-${story}` };
  const connections: Connection[] = [];
  let lastProbeTime: number | undefined;
  /** When a liveness check last succeeded. */
  let lastLiveness: number | undefined;
  let sweptCleanly = false;
  const attempt = <T>(work: Promise<T>) =>
    work.then(
      (value) => ({ ok: true as const, value }),
      () => ({ ok: false as const }),
    );

  for (const step of ops) {
    now += 1;
    const live = connections.filter((c) => c.live);
    switch (step.kind) {
      case 'connect': {
        const id = `f${story}-c${connections.length}`;
        const at = now - step.delay;
        const result = await attempt(store.connect(connectChange(ref, id, at)));
        // A failed $connect refuses the upgrade: the connection never opens, though its
        // write may have landed (a phantom holder only a liveness check can see gone).
        connections.push({
          id,
          connectedAt: at,
          live: result.ok,
          left: false,
          ...(result.ok ? {} : { closedAt: now }),
        });
        break;
      }
      case 'close': {
        const connection = live[step.pick % Math.max(live.length, 1)];
        if (!connection) break;
        connection.live = false;
        connection.closedAt = now;
        if (step.lose) break;
        const left = await attempt(
          store.leave({ connectionId: connection.id, entry: ref, at: now }),
        );
        connection.left = left.ok;
        break;
      }
      case 'health': {
        const connection = live[step.pick % Math.max(live.length, 1)];
        if (!connection) break;
        const result = await attempt(
          store.reportHealth({
            connectionId: connection.id,
            entry: ref,
            healthy: step.healthy,
            at: now,
          }),
        );
        // An open connection that holds the entry never hears that it holds nothing.
        if (result.ok) expect(result.value).not.toBe('not-holder');
        break;
      }
      case 'liveness': {
        const entry = await reader.getEntry(ref);
        const gone = (entry?.connection?.connectionIds ?? []).filter(
          (id) => !connections.find((c) => c.id === id)?.live,
        );
        const result = await attempt(
          gone.length > 0 ? store.dropHolders(ref, gone, now) : Promise.resolve('unchanged'),
        );
        if (result.ok) lastLiveness = now;
        break;
      }
      case 'sweep': {
        sweptCleanly = (
          await attempt(
            runSweep(store, {
              now,
              policy,
              maxDeletes: 1000,
              deletesPerSecond: 1e6,
              sleep: async () => {},
            }),
          )
        ).ok;
        break;
      }
      case 'advance': {
        now += step.ms;
        break;
      }
    }

    const stored = await reader.getEntry(ref);
    for (const connection of connections.filter((c) => c.live)) {
      expect(stored?.connection?.connectionIds).toContain(connection.id);
      expect(stored?.connection?.connectedAt).toBeDefined();
    }
    if (!stored) lastProbeTime = undefined;
    const probed = stored?.health?.lastProbeTime;
    if (probed !== undefined) {
      if (lastProbeTime !== undefined) expect(probed).toBeGreaterThanOrEqual(lastProbeTime);
      lastProbeTime = probed;
    }
    if (step.kind === 'sweep' && sweptCleanly) {
      assertGoneWhenAbandoned(connections, now, lastLiveness, stored !== undefined);
    }
  }
}

/**
 * Every connection closed and each departure seen (its `$disconnect` landed, or a liveness check
 * that succeeded ran after the last close) for the grace period: a clean sweep deleted it.
 */
function assertGoneWhenAbandoned(
  connections: Connection[],
  now: number,
  lastLiveness: number | undefined,
  exists: boolean,
): void {
  if (connections.length === 0 || connections.some((c) => c.live)) return;
  const lastClose = Math.max(...connections.map((c) => c.closedAt ?? now));
  const seenBy = connections.every((c) => c.left)
    ? lastClose
    : lastLiveness !== undefined && lastLiveness >= lastClose
      ? lastLiveness
      : undefined;
  if (seenBy !== undefined && now - seenBy >= policy.gracePeriodMs) expect(exists).toBe(false);
}

function connectChange(
  ref: { namespace: string; name: string },
  connectionId: string,
  connectedAt: number,
): ConnectChange {
  return {
    entry: {
      apiVersion: ISTIO_API_VERSION,
      kind: 'WorkloadEntry',
      metadata: { ...ref },
      spec: { address: '10.0.0.1' },
    },
    autoRegistrationGroup: 'web',
    origin: 'test-origin',
    mayCreate: true,
    recordConnection: false,
    healthChecksEnabled: true,
    groupGeneration: 1,
    connectionId,
    connectedAt,
    controller: 'workload-registrar',
    identity: { principal: 'token:t1' },
  };
}
