import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEARTBEAT_ANNOTATIONS } from '../../lib/domain/heartbeat.ts';
import type { WorkloadGroup } from '../../lib/domain/model.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import type { LivenessAnswer } from '../../lib/registration/liveness.ts';
import { runSweep, type SweepOptions } from '../../lib/registration/sweep.ts';
import { countRequests } from '../../lib/store/request-counter.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import {
  heartbeatGroup,
  MINUTE,
  QUIET_SWEEP_POLICY,
  vmConnect,
} from '../fixtures/heartbeat-fleet.ts';

/**
 * Silence (DESIGN: routable follows reality): a holder open but silent past its group's
 * heartbeat is dropped with a Silent event and closed, over real storage; API Gateway's
 * answers come from a stand-in that says what GetConnection says (`lastActiveAt`).
 */
const T0 = Date.UTC(2026, 2, 1, 12);
const NS = 'shop';
const policy = QUIET_SWEEP_POLICY;

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

function group(annotations: Record<string, string>): WorkloadGroup {
  return heartbeatGroup(NS, 'web', annotations);
}

function connect(
  ip: string,
  connectionId: string,
  at: number,
  agentVersion = '0.2.0',
): ConnectChange {
  return vmConnect({
    namespace: NS,
    group: 'web',
    ip,
    at,
    connectionId,
    agentVersion,
    identity: { principal: 'token:t1' },
  });
}

/** GetConnection as a stand-in: each connection's last message, answered at the sweep's time. */
function gateway(lastActive: Map<string, number>) {
  const closed: string[] = [];
  let answeredAt = T0;
  return {
    closed,
    at: (t: number) => {
      answeredAt = t;
    },
    liveness: {
      check: async (id: string): Promise<LivenessAnswer> => {
        const last = lastActive.get(id);
        return last === undefined ? 'gone' : { alive: { lastActiveAt: last, answeredAt } };
      },
    },
    closeConnection: async (id: string) => {
      closed.push(id);
      lastActive.delete(id);
    },
  };
}

async function heartbeatBed() {
  const { store, client } = await freshRegistry(dynamo.endpoint, 'heartbeat');
  await store.applyGroup(
    group({ [HEARTBEAT_ANNOTATIONS.interval]: '10s', [HEARTBEAT_ANNOTATIONS.misses]: '3' }),
  );
  const lastActive = new Map<string, number>();
  const api = gateway(lastActive);
  const sweep = (now: number, extra: Partial<SweepOptions> = {}) => {
    api.at(now);
    return runSweep(store, {
      now,
      policy,
      maxDeletes: 100,
      deletesPerSecond: 100,
      sleep: async () => {},
      // The run's clock stands at `now`: a pass is dated `now` plus the real time since the run
      // began, which a loaded machine made 10 ms (T0 + 61,010) in a CI run.
      elapsedMs: () => 0,
      liveness: api.liveness,
      closeConnection: api.closeConnection,
      ...extra,
    });
  };
  // The first run sees the group's setting: it applies to holders connected from now on.
  await sweep(T0);
  return { store, client, lastActive, api, sweep };
}

describe("a group's heartbeat", () => {
  it('drops and closes a holder silent past 10 s x 3 with a Silent event, and keeps one that pings', async () => {
    const { store, lastActive, api, sweep } = await heartbeatBed();
    await store.connect(connect('10.0.0.1', 'quiet', T0 + 1_000));
    await store.connect(connect('10.0.0.2', 'chatty', T0 + 1_000));
    lastActive.set('quiet', T0 + 1_000);
    lastActive.set('chatty', T0 + 30_000);

    // 31 s of silence is within 30 s + 1 s of slack: kept.
    const early = await sweep(T0 + 32_000);
    expect(early.silentDropped).toBe(0);
    // A minute later (the next run): 'quiet' said nothing for 60 s; 'chatty' pinged 2 s ago.
    lastActive.set('chatty', T0 + 59_000);
    const result = await sweep(T0 + 61_000);

    expect(result.silentDropped).toBe(1);
    expect(result.livenessDisconnected).toBe(1);
    expect(api.closed).toEqual(['quiet']);
    const quiet = await store.getEntry({ namespace: NS, name: 'web-10-0-0-1' });
    expect(quiet?.connection?.connectedAt).toBeUndefined();
    expect(quiet?.connection?.disconnectedAt).toBe(T0 + 61_000);
    expect(quiet?.events?.at(-1)).toMatchObject({
      reason: 'Silent',
      type: 'Warning',
      message: expect.stringMatching(
        /connection quiet sent nothing for 1m, past its heartbeat 10s x 3: closed; no connection holds the entry/,
      ),
    });
    const chatty = await store.getEntry({ namespace: NS, name: 'web-10-0-0-2' });
    expect(chatty?.connection?.connectionIds).toEqual(['chatty']);
  }, 60_000);

  it('keeps the default bound for an older agent and for a holder connected before the setting applied', async () => {
    const { store, lastActive, sweep } = await heartbeatBed();
    await store.connect(connect('10.0.0.3', 'old-agent', T0 + 1_000, '0.1.x'));
    await store.connect(connect('10.0.0.4', 'before', T0 - 1_000));
    lastActive.set('old-agent', T0 + 1_000);
    lastActive.set('before', T0 - 1_000);

    // Four minutes of silence: fine for a 5 min ping.
    const result = await sweep(T0 + 4 * MINUTE);

    expect(result.livenessChecked).toBe(2);
    expect(result.silentDropped).toBe(0);
  }, 60_000);

  it("never takes out a rotation's new connection, and a second check drops nothing twice", async () => {
    const { store, lastActive, api, sweep } = await heartbeatBed();
    await store.connect(connect('10.0.0.5', 'old', T0 + 1_000));
    lastActive.set('old', T0 + 1_000);
    // Make before break: the new connection opened 20 s ago and has sent nothing yet.
    await store.connect(connect('10.0.0.5', 'new', T0 + 50_000));
    lastActive.set('new', T0 + 10_000);

    const first = await sweep(T0 + 70_000);
    const again = await sweep(T0 + 70_000);

    expect(first.silentDropped).toBe(1);
    expect(first.livenessDisconnected).toBe(0);
    expect(again.silentDropped).toBe(0);
    expect(api.closed).toEqual(['old']);
    const entry = await store.getEntry({ namespace: NS, name: 'web-10-0-0-5' });
    expect(entry?.connection?.connectionIds).toEqual(['new']);
    expect(entry?.events?.filter((e) => e.reason === 'Silent')).toHaveLength(1);
  }, 60_000);

  it('leaves the entry unroutable when the close fails, and says so', async () => {
    const { store, lastActive, sweep } = await heartbeatBed();
    await store.connect(connect('10.0.0.6', 'stuck', T0 + 1_000));
    lastActive.set('stuck', T0 + 1_000);

    const result = await sweep(T0 + 61_000, {
      closeConnection: async () => {
        throw new Error('TooManyRequestsException: slow down');
      },
    });

    expect(result.silentDropped).toBe(1);
    expect(result.silentCloseFailed).toBe(1);
    expect(result.firstCloseFailure).toBe('TooManyRequestsException: slow down');
    expect(result.failed).toBe(0);
    const entry = await store.getEntry({ namespace: NS, name: 'web-10-0-0-6' });
    expect(entry?.connection?.connectionIds ?? []).toEqual([]);
  }, 60_000);

  it("reads the group's held entries with one Query of its name prefix", async () => {
    const { store, client, lastActive, sweep } = await heartbeatBed();
    await store.connect(connect('10.0.0.7', 'c7', T0 + 1_000));
    lastActive.set('c7', T0 + 50_000);
    const requests = countRequests(client);
    const result = await sweep(T0 + 61_000);
    expect(result.livenessChecked).toBe(1);
    const query = requests
      .requests()
      .find((r) => r.command === 'Query' && String(r.input.FilterExpression).includes('conns'));
    expect(query?.input).toMatchObject({
      // Pages of 100: a pass reads only as far as it gets (it ends with the sweep interval).
      Limit: 100,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      FilterExpression: 'autoRegistrationGroup = :group AND attribute_exists(conns)',
      ExpressionAttributeValues: { ':from': 'WE#web-', ':to': 'WE#web-\uffff', ':group': 'web' },
    });
  }, 60_000);
});

describe('several passes in one run', () => {
  it('checks a 10 s x 3 group every 15 s until the sweep interval is over', async () => {
    const { store, lastActive, sweep } = await heartbeatBed();
    await store.connect(connect('10.0.0.8', 'c8', T0 + 1_000));
    lastActive.set('c8', T0 + 1_000);
    let elapsed = 0;
    const checkedAt: number[] = [];
    const result = await sweep(T0 + 10_000, {
      // API Gateway's answers without a Date header: each pass's own time judges.
      liveness: {
        check: async (id: string): Promise<LivenessAnswer> => {
          checkedAt.push(elapsed);
          const last = lastActive.get(id);
          return last === undefined ? 'gone' : { alive: { lastActiveAt: last } };
        },
      },
      repeatHeartbeatPasses: true,
      elapsedMs: () => elapsed,
      sleep: async (ms) => {
        elapsed += ms;
      },
    });
    // Passes at 0, 15, 30 and 45 s of the run: the silence (over 31 s) is found at +30 s, and
    // the pass at 45 s finds the entry no longer held; the run's waits end with its interval.
    expect(checkedAt).toEqual([0, 15_000, 30_000]);
    expect(elapsed).toBe(45_000);
    expect(result.silentDropped).toBe(1);
    const entry = await store.getEntry({ namespace: NS, name: 'web-10-0-0-8' });
    expect(entry?.connection?.disconnectedAt).toBe(T0 + 40_000);
  }, 60_000);
});

describe('a pass longer than a run', () => {
  it("resumes where the last run's deadline stopped it, so the end of a large group is reached", async () => {
    const { store, lastActive, api, sweep } = await heartbeatBed();
    // 8 holders that ping, then 4 silent ones: in name order, the silent ones come last.
    const ips = Array.from({ length: 12 }, (_, i) => `10.0.0.${101 + i}`);
    for (const [i, ip] of ips.entries()) {
      await store.connect(connect(ip, `c${i}`, T0 + 1_000));
      lastActive.set(`c${i}`, i < 8 ? T0 + 55_000 : T0 + 1_000);
    }
    // Each run has time for 5 checks: less than half the group.
    let checks = 0;
    let budget = 0;
    const counted = {
      check: async (id: string) => {
        checks += 1;
        return api.liveness.check(id);
      },
    };
    const run = (now: number) => {
      budget = checks + 5;
      for (const [i] of ips.entries()) if (i < 8) lastActive.set(`c${i}`, now - 1_000);
      return sweep(now, { liveness: counted, outOfTime: () => checks >= budget });
    };
    const first = await run(T0 + 61_000);
    expect(first.stoppedEarly).toBe(true);
    expect(first.silentDropped).toBe(0);
    // The second run goes on after the fifth holder: the 9th and 10th are found.
    const second = await run(T0 + 121_000);
    expect(second.silentDropped).toBe(2);
    const third = await run(T0 + 181_000);
    expect(third.silentDropped).toBe(2);
    expect(api.closed.sort()).toEqual(['c10', 'c11', 'c8', 'c9']);
    // The pingers were never taken out.
    for (const ip of ips.slice(0, 8)) {
      const name = `web-${ip.replaceAll('.', '-')}`;
      expect((await store.getEntry({ namespace: NS, name }))?.connection?.connectedAt).toBe(
        T0 + 1_000,
      );
    }
  });
});
