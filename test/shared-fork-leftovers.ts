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
 * One-shot timers are not counted: vitest's own come and go with its calls to the main process,
 * and one a file left ends by itself. A repeating one does not: every `setInterval` (the
 * global's) is entered in a ledger with the file that set it, and one still live and ref'd
 * when the next file begins was left by its file (`Interval +n`). (One set through
 * `node:timers` directly escapes the ledger.)
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

/**
 * The live repeating timers of a fork, each with the file that set it (undefined: set between
 * two files, at the next one's import, so the next file's).
 */
export interface IntervalLedger {
  live: Map<NodeJS.Timeout, string | undefined>;
  file: string | undefined;
}

/**
 * Enters every `setInterval` of `timers` (the global object, or a stand-in in a test) in a new
 * ledger, and takes it out when `clearInterval` or `clearTimeout` clears it.
 */
export function keepIntervalLedger(
  timers: Pick<typeof globalThis, 'setInterval' | 'clearInterval' | 'clearTimeout'>,
): IntervalLedger {
  const ledger: IntervalLedger = { live: new Map(), file: undefined };
  const { setInterval: set, clearInterval: clear, clearTimeout: clearOnce } = timers;
  const forget = (timer: unknown) => {
    if (typeof timer === 'object' && timer !== null) {
      ledger.live.delete(timer as NodeJS.Timeout);
      return;
    }
    // Cleared by its primitive id: the live timer that has it.
    for (const live of ledger.live.keys()) {
      if (timer !== undefined && String(live[Symbol.toPrimitive]()) === String(timer)) {
        ledger.live.delete(live);
      }
    }
  };
  timers.setInterval = ((...args: Parameters<typeof setInterval>) => {
    const timer = set(...args);
    ledger.live.set(timer, ledger.file);
    return timer;
  }) as typeof setInterval;
  timers.clearInterval = ((timer?: Parameters<typeof clearInterval>[0]) => {
    forget(timer);
    clear(timer);
  }) as typeof clearInterval;
  timers.clearTimeout = ((timer?: Parameters<typeof clearTimeout>[0]) => {
    forget(timer);
    clearOnce(timer);
  }) as typeof clearTimeout;
  return ledger;
}

/**
 * The files whose repeating timers are still live and ref'd, as `Interval +n` each. Gives the
 * timers set between two files (owner undefined) to `current` first, as it begins.
 */
export function intervalsLeft(ledger: IntervalLedger, current: string): Map<string, string> {
  const counts = new Map<string, number>();
  for (const [timer, file] of ledger.live) {
    if (file === undefined) ledger.live.set(timer, current);
    else if (file !== current && timer.hasRef()) counts.set(file, (counts.get(file) ?? 0) + 1);
  }
  return new Map([...counts].map(([file, count]) => [file, `Interval +${count}`]));
}

/** What the fork held when its first file began, and the file that ran last: kept across files. */
const fork = globalThis as {
  registrarForkIdle?: Map<string, number>;
  registrarForkLast?: string;
  registrarForkIntervals?: IntervalLedger;
};
const thisFile = () => relative(process.cwd(), expect.getState().testPath ?? 'unknown');
fork.registrarForkIntervals ??= keepIntervalLedger(globalThis);
const intervals = fork.registrarForkIntervals;

beforeAll(async () => {
  intervals.file = thisFile();
  // A repeating timer is cleared at once or never: no settling.
  for (const [culprit, left] of intervalsLeft(intervals, thisFile())) {
    // Blamed once: forgotten, as the other kinds are measured from here on.
    for (const [timer, file] of intervals.live) if (file === culprit) intervals.live.delete(timer);
    blame(culprit, [left]);
  }
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
  blame(fork.registrarForkLast ?? 'the file before', left);
});

afterAll(() => {
  fork.registrarForkLast = thisFile();
  // What is set from here until the next file's hooks, its imports set.
  intervals.file = undefined;
});

function blame(culprit: string, left: string[]): void {
  if (report) {
    appendFileSync(report, `${JSON.stringify({ file: culprit, left, next: thisFile() })}\n`);
    return;
  }
  throw new Error(
    `${culprit} left ${left.join(', ')} running in its shared fork (found as ${thisFile()} began): stop what a file starts in its own hooks (docs/contributing.md, "Tests")`,
  );
}
