import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';

/**
 * vitest setup file for the shared forks (vitest.config.ts, `REGISTRAR_TEST_SHARED=only`): what
 * a file started and did not stop (a runtime's server, an agent's socket, a child process, a
 * watcher) outlives it in a shared fork, slows the files after it and may break one of them
 * (docs/contributing.md, "Tests"). When a file begins, every hook of the file before it in the
 * fork has run: what then keeps the fork's event loop alive (`process.getActiveResourcesInfo()`,
 * unref'd handles excluded) beyond what did when the fork's first file began was left by the
 * file before, and fails the run, naming that file and each kind.
 *
 * A close in flight (a server's last sockets, a child's exit) may take a few turns of the event
 * loop after a hook resolves: the check waits up to SETTLE_MS for the count to come back.
 * Timers are not counted: vitest's own come and go with its calls to the main process.
 *
 * `REGISTRAR_TEST_LEFTOVERS=<file>` reports instead of failing: one JSON line per file that left
 * something, to find them all in one run.
 */
const SETTLE_MS = 2_000;
const UNCOUNTED = new Set(['Timeout', 'Immediate', 'PipeWrap']);
const report = process.env.REGISTRAR_TEST_LEFTOVERS;

/** How many of each kind of resource keep the event loop alive now (timers and pipes aside). */
export function activeResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) {
    if (!UNCOUNTED.has(kind)) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return counts;
}

/** The kinds `now` has more of than `before`, as `kind +n`, sorted. */
export function leftOver(before: Map<string, number>, now: Map<string, number>): string[] {
  return [...now]
    .filter(([kind, count]) => count > (before.get(kind) ?? 0))
    .map(([kind, count]) => `${kind} +${count - (before.get(kind) ?? 0)}`)
    .sort();
}

/** What the fork held when its first file began, and the file that ran last: kept across files. */
const fork = globalThis as { registrarForkIdle?: Map<string, number>; registrarForkLast?: string };
const thisFile = () => relative(process.cwd(), expect.getState().testPath ?? 'unknown');

beforeAll(async () => {
  const idle = fork.registrarForkIdle;
  if (idle === undefined) {
    fork.registrarForkIdle = activeResources();
    return;
  }
  const deadline = Date.now() + SETTLE_MS;
  let left = leftOver(idle, activeResources());
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((settle) => setTimeout(settle, 10));
    left = leftOver(idle, activeResources());
  }
  if (left.length === 0) return;
  // Blamed once: the files after it are measured from here on.
  fork.registrarForkIdle = activeResources();
  const culprit = fork.registrarForkLast ?? 'the file before';
  if (report) {
    appendFileSync(report, `${JSON.stringify({ file: culprit, left, next: thisFile() })}\n`);
    return;
  }
  throw new Error(
    `${culprit} left ${left.join(', ')} running in its shared fork (found as ${thisFile()} began): stop what a file starts in its own hooks (docs/contributing.md, "Tests")`,
  );
});

afterAll(() => {
  fork.registrarForkLast = thisFile();
});
