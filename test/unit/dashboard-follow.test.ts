import { describe, expect, it } from 'vitest';
import {
  FOLLOW_CHECK_MS,
  followLocalRuntime,
  type OpenedSources,
} from '../../cli/commands/dashboard-sources.ts';
import type { Target } from '../../cli/target.ts';
import { noRefusals } from '../../lib/dashboard-server/refusals.ts';

/**
 * `registrar dashboard` over the local runtime: local.json read again, and the store it names
 * opened, closed and announced when it changes (npm start moves its store on each restart).
 */
function local(port: number): Target {
  return {
    tableName: 'registry',
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    source: '.registrar/local.json',
    local: true,
  };
}

function harness() {
  let clock = 0;
  let current: Target | Error = local(41000);
  const opened: string[] = [];
  const closed: string[] = [];
  const open = async (target: Target): Promise<OpenedSources> => {
    const at = target.endpoint as string;
    opened.push(at);
    return {
      sources: {
        catalog: {
          listNamespaces: async () => ({ namespaces: [at], complete: true }),
          listEntries: async () => [],
          getEntry: async () => undefined,
        },
        disruption: { zoneCounts: async () => [], disruptionRecord: async () => undefined },
        sweepRuns: { recent: async () => [] },
        refusals: noRefusals('test'),
        target: at,
        now: () => 0,
      },
      close: () => closed.push(at),
    };
  };
  const reread = async () => {
    if (current instanceof Error) throw current;
    return current;
  };
  return {
    opened,
    closed,
    start: () => followLocalRuntime(local(41000), reread, open, () => clock),
    restartOn: (port: number) => {
      current = local(port);
    },
    stop: () => {
      current = new Error('no local runtime is running: .registrar/local.json does not exist');
    },
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

describe('the dashboard following the local runtime', () => {
  it('reads the store local.json names now, and drops the old one once it changed', async () => {
    const h = harness();
    const { sources } = await h.start();
    let changes = 0;
    sources.onTargetChange?.(() => changes++);
    expect((await sources.catalog.listNamespaces()).namespaces).toEqual(['http://127.0.0.1:41000']);
    h.restartOn(42000);
    h.advance(FOLLOW_CHECK_MS);
    expect((await sources.catalog.listNamespaces()).namespaces).toEqual(['http://127.0.0.1:42000']);
    expect(changes).toBe(1);
    expect(h.closed).toEqual(['http://127.0.0.1:41000']);
    expect(sources.target).toContain('http://127.0.0.1:42000');
  });

  it('does not read local.json again within a second while reads succeed', async () => {
    const h = harness();
    const { sources } = await h.start();
    h.restartOn(42000);
    h.advance(FOLLOW_CHECK_MS - 1);
    expect((await sources.catalog.listNamespaces()).namespaces).toEqual(['http://127.0.0.1:41000']);
    expect(h.opened).toEqual(['http://127.0.0.1:41000']);
  });

  it("fails each read with local.json's explanation while the runtime is stopped", async () => {
    const h = harness();
    const { sources } = await h.start();
    h.stop();
    h.advance(FOLLOW_CHECK_MS);
    await expect(sources.catalog.listNamespaces()).rejects.toThrow('no local runtime is running');
    h.restartOn(43000);
    // Right after a failure local.json is read again at once, not a second later.
    expect((await sources.catalog.listNamespaces()).namespaces).toEqual(['http://127.0.0.1:43000']);
  });
});
