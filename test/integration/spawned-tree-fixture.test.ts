import { writeFileSync } from 'node:fs';
import { describe, it } from 'vitest';
import { startRuntimeProcess } from '../fixtures/local-runtime-process.ts';
import { currentTree, startRuntime } from '../fixtures/release-fleet.ts';

/**
 * Not a test on its own: the process tree that test/integration/test-command-stop.test.ts
 * stops at a random moment. It starts the two kinds of local runtime the suite starts (one
 * in the test process's group, as most tests do; one through `npm start` in a group of its
 * own, as the upgrade tests do), says so in the file REGISTRAR_SPAWNED_TREE_READY names, and
 * waits to be stopped. Skipped in a normal run.
 */
const ready = process.env.REGISTRAR_SPAWNED_TREE_READY;

describe.runIf(ready)('a test run with runtimes in its process tree', () => {
  it('runs until it is stopped', async () => {
    const inGroup = await startRuntimeProcess(['--memory']);
    const ownGroup = await startRuntime(currentTree(), ['--memory', '--port', '0']);
    writeFileSync(
      ready as string,
      JSON.stringify({ inGroup: inGroup.child.pid, ownGroup: ownGroup.child.pid }),
    );
    await new Promise(() => undefined);
  }, 600_000);
});
