import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

vi.hoisted(() => {
  process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
});

import { createProjectHandler, logFields } from '../../functions/project.ts';
import type { Cluster } from '../../lib/projection/cluster.ts';
import type { ProjectorDeps } from '../../lib/projection/projector.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';

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
});
