import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper.ts';
import { createRenderer } from '../../infra/local/console-log.ts';
import { ENV, readConfig } from '../../lib/config.ts';
import { HEARTBEAT_ANNOTATIONS } from '../../lib/domain/heartbeat.ts';
import { ISTIO_API_VERSION, type WorkloadGroup } from '../../lib/domain/model.ts';
import { logger, METRIC, metrics } from '../../lib/observability.ts';
import type { ConnectChange } from '../../lib/registration/entry-lifecycle-store.ts';
import type { LivenessAnswer } from '../../lib/registration/liveness.ts';
import { sweeperStore } from '../../lib/wiring/sweeper-store.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { vmConnect } from '../fixtures/heartbeat-fleet.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';
import { sweeperRecordsInMemory } from '../fixtures/sweep-stand-ins.ts';

/**
 * The sweeper function counts the holders it drops for silence past their group's heartbeat
 * in the EMF metric `SilentHoldersDropped` (every run, zero included), says whose in its log
 * line, and the local console shows that line with the count. Real store (dynalite), the
 * deployed handler, API Gateway's answers from a stand-in, explicit times.
 */
const T0 = Date.UTC(2026, 2, 1, 12);

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});
afterEach(() => {
  vi.restoreAllMocks();
});

function vm(ip: string, connectionId: string, at: number): ConnectChange {
  return vmConnect({
    namespace: 'shop',
    group: 'web',
    ip,
    at,
    connectionId,
    agentVersion: '0.2.0',
  });
}

describe('SilentHoldersDropped', () => {
  it('counts a VM silent past its 5 s x 2 heartbeat, and not one that pings', async () => {
    const { client, tableName, store } = await freshRegistry(dynamo.endpoint, 'silent-metric');
    await store.applyGroup({
      apiVersion: ISTIO_API_VERSION,
      kind: 'WorkloadGroup',
      metadata: {
        name: 'web',
        namespace: 'shop',
        annotations: {
          [HEARTBEAT_ANNOTATIONS.interval]: '5s',
          [HEARTBEAT_ANNOTATIONS.misses]: '2',
        },
      },
      spec: { template: { ports: { http: 8080 } } },
    } as WorkloadGroup);
    let clock = T0;
    const lastActive = new Map<string, number>();
    const closed: string[] = [];
    const sweeper = createSweeperHandler({
      ...NO_CAPABILITIES,
      // One pass a run (a sweep interval shorter than the pass period), so a run is quick.
      config: readConfig({ [ENV.tableName]: tableName, [ENV.sweepInterval]: '1s' }),
      store: sweeperStore(client, tableName),
      liveness: {
        check: async (id: string): Promise<LivenessAnswer> => {
          const last = lastActive.get(id);
          return last === undefined ? 'gone' : { alive: { lastActiveAt: last, answeredAt: clock } };
        },
      },
      closeConnection: async (id: string) => {
        closed.push(id);
      },
      ...sweeperRecordsInMemory(),
      now: () => clock,
    });
    const sweepAt = async (at: number) => {
      clock = at;
      const added = vi.spyOn(metrics, 'addMetric');
      const warned = vi.spyOn(logger, 'warn');
      const summary = await sweeper({}, lambdaContext('registrar-sweeper'));
      const run = {
        summary,
        // The values this run gave the metric, in order.
        silent: added.mock.calls
          .filter(([name]) => name === METRIC.silentHolders)
          .map(([, , value]) => value),
        warnings: warned.mock.calls.map(([message, fields]) => ({ message, fields })),
      };
      added.mockRestore();
      warned.mockRestore();
      return run;
    };
    // The first run sees the setting: it applies to the holders connected from now on.
    await sweepAt(T0);
    await store.connect(vm('10.0.0.1', 'quiet', T0 + 1_000));
    await store.connect(vm('10.0.0.2', 'chatty', T0 + 1_000));
    lastActive.set('quiet', T0 + 1_000);

    // 4 s of silence: both within 10 s + 1 s. A run that drops none still says so: 0.
    lastActive.set('chatty', T0 + 4_000);
    const calm = await sweepAt(T0 + 5_000);
    // 'quiet' silent for 12 s; 'chatty' pinged 0.5 s ago.
    lastActive.set('chatty', T0 + 12_500);
    const found = await sweepAt(T0 + 13_000);

    expect(calm.silent).toEqual([0]);
    expect(calm.summary.silentDropped).toBe(0);
    expect(found.silent).toEqual([1]);
    expect(found.summary.silentDropped).toBe(1);
    expect(closed).toEqual(['quiet']);
    const line = found.warnings.find(({ message }) => String(message).startsWith('connections'));
    expect(line?.fields).toMatchObject({ silent: 1, byNamespace: { shop: 1 }, closeFailed: 0 });

    // The local console's line for it, rendered from the record the handler logged.
    const render = createRenderer({
      gracePeriodMs: 300_000,
      maxConnectionAgeMs: 7_200_000,
      level: 'INFO',
    });
    const rendered = render({
      level: 'WARN',
      message: line?.message,
      timestamp: new Date(T0).toISOString(),
      ...(line?.fields as Record<string, unknown>),
    });
    expect(rendered?.replace(/^\d\d:\d\d:\d\d /, '')).toBe(
      'sweep closed 1 connection silent past its heartbeat (shop: 1)',
    );
  }, 60_000);
});
