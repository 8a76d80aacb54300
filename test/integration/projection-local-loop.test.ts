import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startProjectorLoop } from '../../infra/local/projector-loop.ts';
import type { ProjectionReport } from '../../lib/projection/report.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { entryRecord, MemoryCatalog } from '../fixtures/projection-records.ts';

// The local runtime's loop, reading a kubeconfig file that points at the in-process
// kube-apiserver STAND-IN (no real API server can run here).

let api: KubeApiServerStandIn;
let dir: string;
afterEach(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

describe('local projector loop', () => {
  it('reconciles at start and again on each interval, until stopped', async () => {
    api = await startKubeApiServerStandIn();
    dir = await mkdtemp(join(tmpdir(), 'loop-'));
    await writeFile(join(dir, 'kubeconfig'), api.kubeconfig);
    const catalog = new MemoryCatalog().set(entryRecord('vm-a'));
    const reports: ProjectionReport[] = [];
    let resolveSecond: () => void = () => undefined;
    const second = new Promise<void>((resolve) => {
      resolveSecond = resolve;
    });

    const loop = startProjectorLoop({
      kubeconfigPath: join(dir, 'kubeconfig'),
      store: catalog,
      intervalMs: 20,
      targets: ['istio'],
      onReport: (report) => {
        reports.push(report);
        if (reports.length === 1) catalog.set(entryRecord('vm-b', { address: '10.0.0.2' }));
        if (reports.length === 2) resolveSecond();
      },
    });
    await second;
    await loop.stop();
    const runs = reports.length;

    expect(reports[0]?.changes.map((c) => c.name)).toEqual(['vm-a']);
    expect(reports[1]?.changes.map((c) => c.name)).toEqual(['vm-b']);
    expect(api.objects('WorkloadEntry').map((o) => o.metadata.name)).toEqual(['vm-a', 'vm-b']);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(reports).toHaveLength(runs);
  });
});
