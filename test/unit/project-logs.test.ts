import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

vi.hoisted(() => {
  process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
});

import { createProjectHandler, logFields } from '../../functions/project.ts';
import { parseCidr } from '../../lib/domain/cidr.ts';
import { metrics } from '../../lib/observability.ts';
import type { Cluster } from '../../lib/projection/cluster.ts';
import { PROJECTION_METRIC } from '../../lib/projection/projection-metrics.ts';
import type { ProjectorDeps } from '../../lib/projection/projector.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { entryRecord } from '../fixtures/projection-records.ts';

let lines: Record<string, unknown>[] = [];
beforeEach(() => {
  lines = [];
  const capture = (chunk: unknown) => {
    for (const line of String(chunk).split('\n').filter(Boolean)) {
      try {
        lines.push(JSON.parse(line));
      } catch {
        // not a log line
      }
    }
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe('projector logs', () => {
  it('keep the reason of a problem under its own key (Powertools drops a `message` key)', () => {
    expect(
      logFields({ kind: 'WorkloadEntry', namespace: 'shop', name: 'web', message: 'no CRD' }),
    ).toEqual({ kind: 'WorkloadEntry', namespace: 'shop', name: 'web', reason: 'no CRD' });
  });

  it('say why a reconcile failed in the error line', async () => {
    const unreachable = () => Promise.reject(new Error('registry table unreachable'));
    const store: ProjectorDeps['store'] = {
      listNamespaces: unreachable,
      listEntries: unreachable,
      listGroups: unreachable,
      getEntry: unreachable,
    };
    const cluster: Cluster = {
      list: async () => [],
      get: async () => undefined,
      create: unreachable,
      replace: unreachable,
      replaceStatus: unreachable,
      delete: unreachable,
    };
    const handler = createProjectHandler({
      store,
      connect: async () => cluster,
      targets: ['istio'],
    });
    await expect(handler({}, lambdaContext('project'))).rejects.toThrow(/projection failed/);
    const errors = lines.filter((line) => line.message === 'projection error');
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]?.reason).toMatch(/registry table unreachable/);
  });

  it("log and count an entry left out for its address, naming the address and the cluster's range", async () => {
    const counted: Record<string, number> = {};
    vi.spyOn(metrics, 'addMetric').mockImplementation((name, _unit, value) => {
      counted[name] = value;
      return metrics;
    });
    const api = entryRecord('web-10.96.0.1', { address: '10.96.0.1' });
    const store: ProjectorDeps['store'] = {
      listNamespaces: async () => ({ namespaces: ['shop'], complete: true }),
      listEntries: async () => [api],
      listGroups: async () => [],
      getEntry: async () => api,
    };
    const cluster: Cluster = {
      list: async () => [],
      get: async () => undefined,
      create: async (_kind, object) => ({ outcome: 'written', object }),
      replace: async (_kind, object) => ({ outcome: 'written', object }),
      replaceStatus: async (_kind, object) => ({ outcome: 'written', object }),
      delete: async () => 'deleted',
    };
    const range = parseCidr('10.96.0.0/12');
    if (!range.ok) throw new Error(range.problem);
    const handler = createProjectHandler({
      store,
      connect: async () => cluster,
      targets: ['istio'],
      clusterRanges: [range.cidr],
    });

    const summary = await handler({}, lambdaContext('project'));

    expect(summary.changes).toBe(0);
    expect(lines.find((line) => line.message === 'endpoint refused')).toMatchObject({
      namespace: 'shop',
      name: 'web-10.96.0.1',
      address: '10.96.0.1',
      reason:
        "address 10.96.0.1 is in the cluster's range 10.96.0.0/12 (pods or Services): an entry must not stand in for them",
    });
    expect(counted[PROJECTION_METRIC.refusedEndpoints]).toBe(1);
  });
});
