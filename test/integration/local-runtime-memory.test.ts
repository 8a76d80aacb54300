import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type HeapReading,
  type InspectedProcess,
  inspect,
  inspectorUrl,
} from '../fixtures/inspector-heap.ts';
import { type RuntimeProcess, startRuntimeProcess } from '../fixtures/local-runtime-process.ts';

/**
 * An idle `npm start` with sweeps as fast as the tests run them keeps a flat heap, on its main
 * thread (the handlers, the deployed sweeper's code) and on its store thread (dynalite), and
 * stops promptly on SIGTERM. Before the store closed its LevelDB iterators
 * (infra/local/dynalite-iterator-close.ts) such a runtime grew ~0.8 MB a second and one left
 * running reached 3.8 GB. The heap is read after a full GC over the inspector, in the runtime's
 * own process, as a heap snapshot would weigh it.
 */

const WINDOW_MS = 40_000;
/** Far above what a GC leaves behind between two readings, far below the leak's rate. */
const MAX_STORE_GROWTH = 2_000_000;
const MAX_MAIN_GROWTH = 3_000_000;
/** SIGTERM to exit, idle, with a loaded machine's margin. */
const STOP_WITHIN_MS = 10_000;

const dir = mkdtempSync(join(tmpdir(), 'runtime-memory-'));
let runtime: RuntimeProcess | undefined;
let inspector: InspectedProcess | undefined;

afterAll(async () => {
  await inspector?.close();
  if (runtime && runtime.child.exitCode === null) runtime.child.kill('SIGKILL');
  await runtime?.exited;
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The smallest of three readings: one taken while a sweep is under way counts that sweep's
 * objects, which the next GC frees; what stays in all three is what the runtime keeps.
 */
async function settledHeap(process: InspectedProcess): Promise<HeapReading> {
  const readings: HeapReading[] = [];
  for (let i = 0; i < 3; i++) readings.push(await process.heapAfterGc());
  return {
    main: Math.min(...readings.map((reading) => reading.main)),
    threads: { dynalite: Math.min(...readings.map(storeHeap)) },
  };
}

function storeHeap(reading: HeapReading): number {
  const entry = Object.entries(reading.threads).find(([name]) => name.endsWith('dynalite'));
  if (!entry) throw new Error(`no store thread among ${Object.keys(reading.threads).join(', ')}`);
  return entry[1];
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

describe('an idle local runtime sweeping every 50 ms', () => {
  it('keeps its heap flat on both threads, and stops promptly on SIGTERM', async () => {
    runtime = await startRuntimeProcess(
      ['--sweep-interval', '50ms', '--data-dir', join(dir, 'data')],
      { NODE_OPTIONS: '--inspect=127.0.0.1:0' },
    );
    const url = inspectorUrl(runtime.stderr());
    if (!url) throw new Error(`no inspector URL on stderr:\n${runtime.stderr()}`);
    inspector = await inspect(url);

    // The first sweeps load code and fill caches; the window starts after them.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const start = await settledHeap(inspector);
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
    const end = await settledHeap(inspector);

    const growth = {
      main: end.main - start.main,
      store: storeHeap(end) - storeHeap(start),
    };
    const report = `main ${mb(start.main)} -> ${mb(end.main)}, store ${mb(storeHeap(start))} -> ${mb(storeHeap(end))}`;
    expect(growth.store, report).toBeLessThan(MAX_STORE_GROWTH);
    expect(growth.main, report).toBeLessThan(MAX_MAIN_GROWTH);

    // A process with a debugger attached waits for it at exit: let go first.
    await inspector.close();
    const asked = Date.now();
    runtime.child.kill('SIGTERM');
    expect(await runtime.exited).toBe(0);
    expect(Date.now() - asked).toBeLessThan(STOP_WITHIN_MS);
  }, 120_000);
});
