import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Heartbeat } from '../../lib/domain/heartbeat.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { acknowledgeHeartbeat } from '../../lib/registration/acknowledge-heartbeat.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import type { LivenessAnswer } from '../../lib/registration/liveness.ts';
import { runSweep, type SweepOptions } from '../../lib/registration/sweep.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { heartbeatGroup, QUIET_SWEEP_POLICY, vmConnect } from '../fixtures/heartbeat-fleet.ts';

/**
 * Issue 44, "a changed heartbeat reaches live VMs", over real storage: the sweeper's pass tells
 * each live holder that takes notices and was told another setting (a `heartbeat-change`
 * notice through a stand-in of POST @connections), every pass until it acknowledges; the
 * acknowledgement is recorded only for the group's setting now, only for a holder, and from
 * it the holder is held to the new bound, its silence counted from no earlier. Lost, repeated
 * and stale acknowledgements, failed notices, old agents: each has its test.
 */
const T0 = Date.UTC(2026, 10, 28, 12);
const NS = 'shop';
const ENTRY = { namespace: NS, name: 'web-10-2-0-1' };
const TEN_BY_THREE: Heartbeat = { intervalMs: 10_000, misses: 3 };
const FIVE_BY_TWO: Heartbeat = { intervalMs: 5_000, misses: 2 };
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

function connect(
  ip: string,
  connectionId: string,
  at: number,
  told: Heartbeat,
  agentVersion = '0.3.0',
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

async function bed() {
  const { store } = await freshRegistry(dynamo.endpoint, 'notices');
  await store.applyGroup(group(TEN_BY_THREE));
  const lastActive = new Map<string, number>();
  const told: { id: string; notice: unknown }[] = [];
  let noticeAnswer: 'sent' | 'gone' | { failed: string } = 'sent';
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
        lastActive.delete(id);
      },
      notifyConnection: async (id, notice) => {
        told.push({ id, notice });
        return noticeAnswer;
      },
      ...extra,
    });
  return {
    store,
    lastActive,
    told,
    sweep,
    answer: (answer: typeof noticeAnswer) => {
      noticeAnswer = answer;
    },
  };
}

const ack = (store: RegistrarStore, id: string, heartbeat: Heartbeat, at: number) =>
  acknowledgeHeartbeat(
    store,
    { connectionId: id, carried: ENTRY },
    { intervalSeconds: heartbeat.intervalMs / 1000, misses: heartbeat.misses },
    at,
  );

describe('a changed heartbeat, told to live agents', () => {
  it('is told to each live holder that takes notices, on every pass until it acknowledges, and never to an older agent', async () => {
    const { store, lastActive, told, sweep } = await bed();
    await store.connect(connect('10.2.0.1', 'new', T0, TEN_BY_THREE));
    await store.connect(connect('10.2.0.2', 'old', T0, TEN_BY_THREE, '0.2.0'));
    lastActive.set('new', T0);
    lastActive.set('old', T0);
    await sweep(T0 + 1_000);
    expect(told).toEqual([]);

    await store.applyGroup(group(FIVE_BY_TWO));
    lastActive.set('new', T0 + 5_000);
    lastActive.set('old', T0 + 5_000);
    const first = await sweep(T0 + 6_000);
    expect(first.heartbeatNotices).toBe(1);
    expect(told).toEqual([
      {
        id: 'new',
        notice: { action: 'heartbeat-change', heartbeat: { intervalSeconds: 5, misses: 2 } },
      },
    ]);
    // The notice (or its acknowledgement) was lost: the next pass tells it again.
    await sweep(T0 + 7_000);
    expect(told.map((t) => t.id)).toEqual(['new', 'new']);

    await ack(store, 'new', FIVE_BY_TWO, T0 + 7_500);
    await sweep(T0 + 8_000);
    expect(told).toHaveLength(2);
    const record = await store.getEntry(ENTRY);
    expect(record?.connection?.holderBeats?.new).toEqual({
      told: FIVE_BY_TWO,
      follows: true,
      notices: true,
      at: T0 + 7_500,
    });
    expect(record?.events?.at(-1)).toMatchObject({
      reason: 'HeartbeatChanged',
      message:
        "connection new acknowledged its group's heartbeat 5s x 2 (was 10s x 3): held to it from now",
    });
  }, 60_000);

  it('holds an acknowledged shorter bound only from the acknowledgement: silence before it is not counted', async () => {
    const { store, lastActive, sweep } = await bed();
    await store.connect(connect('10.2.0.1', 'new', T0, TEN_BY_THREE));
    await store.applyGroup(group(FIVE_BY_TWO));
    // Its last ping 25 s ago (fine for 10 s x 3); it acknowledges 5 s x 2 now. As API Gateway
    // counts the acknowledgement as activity, so does the bound: 11 s from now, not 25 s ago.
    lastActive.set('new', T0 + 5_000);
    await ack(store, 'new', FIVE_BY_TWO, T0 + 30_000);
    const within = await sweep(T0 + 40_000);
    expect(within.silentDropped).toBe(0);
    const past = await sweep(T0 + 41_001);
    expect(past.silentDropped).toBe(1);
  }, 60_000);

  it('records an acknowledgement only of the setting now, only from a holder, and the same one twice alike', async () => {
    const { store } = await bed();
    await store.connect(connect('10.2.0.1', 'new', T0, TEN_BY_THREE));
    await store.applyGroup(group(FIVE_BY_TWO));

    // Stale (the agent acknowledges what it was told before the group changed again).
    await expect(ack(store, 'new', TEN_BY_THREE, T0 + 1_000)).rejects.toMatchObject({
      code: 'HeartbeatNotCurrent',
    });
    // An agent's own word for a setting no group may have.
    await expect(
      ack(store, 'new', { intervalMs: 1_000, misses: 1 }, T0 + 1_000),
    ).rejects.toMatchObject({
      code: 'InvalidRequest',
    });
    // A connection that holds nothing.
    await expect(ack(store, 'stranger', FIVE_BY_TWO, T0 + 1_000)).rejects.toMatchObject({
      code: 'NotRegistered',
    });
    expect((await store.getEntry(ENTRY))?.connection?.holderBeats?.new?.told).toEqual(TEN_BY_THREE);

    await ack(store, 'new', FIVE_BY_TWO, T0 + 2_000);
    // Repeated (a lost reply, the agent's retry): the same record, one more event.
    await ack(store, 'new', FIVE_BY_TWO, T0 + 2_000);
    const record = await store.getEntry(ENTRY);
    expect(record?.connection?.holderBeats?.new?.told).toEqual(FIVE_BY_TWO);
    // A holder that left meanwhile: a late acknowledgement records nothing.
    await store.leave({ connectionId: 'new', entry: ENTRY, at: T0 + 3_000 });
    await expect(ack(store, 'new', FIVE_BY_TWO, T0 + 4_000)).rejects.toMatchObject({
      code: 'NotRegistered',
    });
  }, 60_000);

  it('fails no run when a notice does not land, and tells no holder that is gone or silent', async () => {
    const { store, lastActive, told, sweep, answer } = await bed();
    await store.connect(connect('10.2.0.1', 'new', T0, TEN_BY_THREE));
    await store.connect(connect('10.2.0.3', 'quiet', T0, TEN_BY_THREE));
    await store.applyGroup(group(FIVE_BY_TWO));
    lastActive.set('new', T0 + 30_000);
    lastActive.set('quiet', T0);
    answer({ failed: 'TooManyRequestsException' });

    const result = await sweep(T0 + 32_000);

    expect(result.failed).toBe(0);
    expect(result.heartbeatNoticesFailed).toBe(1);
    expect(result.silentDropped).toBe(1);
    expect(told.map((t) => t.id)).toEqual(['new']);
  }, 60_000);
});
