import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Heartbeat } from '../../lib/domain/heartbeat.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { describeConnection } from '../../lib/registration/describe-connection.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import type { LivenessAnswer } from '../../lib/registration/liveness.ts';
import { runSweep, type SweepOptions } from '../../lib/registration/sweep.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import {
  heartbeatGroup,
  MINUTE,
  QUIET_SWEEP_POLICY,
  vmConnect,
} from '../fixtures/heartbeat-fleet.ts';

/**
 * Issue 44, "told but not enforced", over real storage: `$connect` records on the holder the
 * heartbeat its `describe` names, and the sweeper holds the holder to exactly that, whatever
 * its record of the group says (a group it has not listed yet, or changed since). API
 * Gateway's GetConnection is a stand-in that answers each connection's `lastActiveAt`.
 */
const T0 = Date.UTC(2026, 10, 28, 12);
const NS = 'shop';
const FIVE_BY_TWO: Heartbeat = { intervalMs: 5_000, misses: 2 };
const TEN_BY_THREE: Heartbeat = { intervalMs: 10_000, misses: 3 };
const policy = QUIET_SWEEP_POLICY;

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

function group(heartbeat: Heartbeat): WorkloadGroup {
  return heartbeatGroup(NS, 'web', heartbeat);
}

/** A connect as `$connect` makes it, telling the agent `told` (registerWorkload's rule). */
function connect(
  ip: string,
  connectionId: string,
  at: number,
  told: Heartbeat,
  /** null: the connect named no version (registerWorkload records `0.1.x`). */
  agentVersion: string | null = '0.3.0',
): ConnectChange {
  return vmConnect({
    namespace: NS,
    group: 'web',
    ip,
    at,
    connectionId,
    agentVersion,
    told,
    identity: { principal: 'token:t1' },
  });
}

async function bed(setting: Heartbeat) {
  const { store } = await freshRegistry(dynamo.endpoint, 'told');
  await store.applyGroup(group(setting));
  const lastActive = new Map<string, number>();
  const closed: string[] = [];
  const sweep = (now: number, extra: Partial<SweepOptions> = {}) =>
    runSweep(store, {
      now,
      policy,
      maxDeletes: 100,
      deletesPerSecond: 100,
      sleep: async () => {},
      liveness: {
        check: async (id: string): Promise<LivenessAnswer> => {
          const last = lastActive.get(id);
          return last === undefined ? 'gone' : { alive: { lastActiveAt: last, answeredAt: now } };
        },
      },
      closeConnection: async (id: string) => {
        closed.push(id);
        lastActive.delete(id);
      },
      ...extra,
    });
  return { store, lastActive, closed, sweep };
}

const entry = (store: RegistrarStore, ip: string) =>
  store.getEntry({ namespace: NS, name: `web-${ip.replaceAll('.', '-')}` });

describe('the heartbeat a holder was told', () => {
  it('is enforced though the sweeper had not listed the group when the VM connected (main: the default, 10 min)', async () => {
    const { store, lastActive, closed, sweep } = await bed(FIVE_BY_TWO);
    // Connected (and told 5 s x 2) before any sweeper run saw the group.
    await store.connect(connect('10.1.0.1', 'frozen', T0 - 1_000, FIVE_BY_TWO));
    lastActive.set('frozen', T0 - 1_000);

    // 12 s of silence: past 10 s + 1 s of slack.
    const result = await sweep(T0 + 11_001);

    expect(result.silentDropped).toBe(1);
    expect(closed).toEqual(['frozen']);
    const record = await entry(store, '10.1.0.1');
    expect(record?.connection?.connectedAt).toBeUndefined();
    expect(record?.events?.at(-1)?.message).toMatch(/past its heartbeat 5s x 2/);
  }, 60_000);

  it('stays the bound after the group is shortened: a holder told 10 s x 3 is not taken out at 15 s of silence', async () => {
    const { store, lastActive, sweep } = await bed(TEN_BY_THREE);
    await sweep(T0);
    await store.connect(connect('10.1.0.2', 'before', T0 + 1_000, TEN_BY_THREE));
    lastActive.set('before', T0 + 1_000);
    // The operator shortens the group; the sweeper lists it again.
    await store.applyGroup(group(FIVE_BY_TWO));
    await sweep(T0 + 2_000);

    const within = await sweep(T0 + 16_000);
    expect(within.silentDropped).toBe(0);
    // Past its own bound (30 s + 1 s), it goes.
    const past = await sweep(T0 + 32_002);
    expect(past.silentDropped).toBe(1);
  }, 60_000);

  it('is the default for an agent that does not follow heartbeats (0.1.x, or no version): told and held to it', async () => {
    const { store, lastActive, sweep } = await bed(FIVE_BY_TWO);
    await sweep(T0);
    await store.connect(connect('10.1.0.3', 'old', T0 + 1_000, FIVE_BY_TWO, '0.1.x'));
    await store.connect(connect('10.1.0.4', 'bare', T0 + 1_000, FIVE_BY_TWO, null));
    lastActive.set('old', T0 + 1_000);
    lastActive.set('bare', T0 + 1_000);

    // Nine minutes of silence: within a 5-minute ping's 10-minute bound.
    const result = await sweep(T0 + 9 * MINUTE);
    expect(result.silentDropped).toBe(0);
    for (const [ip, id] of [
      ['10.1.0.3', 'old'],
      ['10.1.0.4', 'bare'],
    ] as const) {
      const record = await entry(store, ip);
      expect(record?.connection?.holderBeats?.[id]).toMatchObject({
        told: { intervalMs: 300_000, misses: 2 },
        follows: false,
      });
      // What its describe names: what it is held to.
      const described = await describeConnection(store, id, {
        namespace: NS,
        name: record?.entry.metadata.name ?? '',
      });
      expect(described.heartbeat).toEqual({ intervalMs: 300_000, misses: 2 });
    }
  }, 60_000);

  it('is what describe names, not the group as it is now', async () => {
    const { store } = await bed(FIVE_BY_TWO);
    await store.connect(connect('10.1.0.5', 'told', T0, FIVE_BY_TWO));
    await store.applyGroup(group(TEN_BY_THREE));
    const described = await describeConnection(store, 'told', {
      namespace: NS,
      name: 'web-10-1-0-5',
    });
    expect(described.heartbeat).toEqual(FIVE_BY_TWO);
  }, 60_000);

  it('is kept per holder, whatever the order of connects, and leaves with its holder', async () => {
    const { store } = await bed(FIVE_BY_TWO);
    // A rotation whose connects API Gateway ran out of order: the older one joins second.
    await store.connect(connect('10.1.0.6', 'new', T0 + 5_000, FIVE_BY_TWO));
    await store.connect(connect('10.1.0.6', 'old', T0 + 1_000, TEN_BY_THREE));
    // The same connect written twice (the SDK's retry after a lost response).
    await store.connect(connect('10.1.0.6', 'new', T0 + 5_000, FIVE_BY_TWO));
    let record = await entry(store, '10.1.0.6');
    expect(record?.connection?.holderBeats?.new?.told).toEqual(FIVE_BY_TWO);
    expect(record?.connection?.holderBeats?.old?.told).toEqual(TEN_BY_THREE);

    await store.leave({
      connectionId: 'old',
      entry: { namespace: NS, name: 'web-10-1-0-6' },
      at: T0 + 6_000,
      replaced: true,
    });
    record = await entry(store, '10.1.0.6');
    expect(Object.keys(record?.connection?.holderBeats ?? {})).toEqual(['new']);
  }, 60_000);
});
