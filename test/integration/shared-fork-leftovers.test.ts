import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runProgram } from '../fixtures/run-program.ts';
import {
  activeResources,
  intervalsLeft,
  keepIntervalLedger,
  leftOver,
} from '../shared-fork-leftovers.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const work = mkdtempSync(join(tmpdir(), 'shared-fork-leftovers-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * test/shared-fork-leftovers.ts, the check every shared fork runs as a file begins: run for real
 * by a vitest of its own over two files in one fork without isolation, the first of which
 * leaves a server listening. (That it lets a clean file through, every run of `npm test` shows:
 * the check runs in all its shared forks.)
 */
async function runPair(first: string): Promise<{ code: number | null; output: string }> {
  const dir = mkdtempSync(join(work, 'pair-'));
  // Globals, so the files import nothing (they live outside the repository's node_modules);
  // a sequencer by name, so the file that may leave something runs first.
  writeFileSync(join(dir, 'a-first.test.js'), first);
  writeFileSync(join(dir, 'b-next.test.js'), "it('runs after', () => expect(1).toBe(1));\n");
  writeFileSync(
    join(dir, 'vitest.config.mjs'),
    `export default {
  test: {
    globals: true,
    include: ['*.test.js'],
    setupFiles: [${JSON.stringify(join(REPO, 'test/shared-fork-leftovers.ts'))}],
    pool: 'forks',
    poolOptions: { forks: { isolate: false, maxForks: 1, minForks: 1 } },
    sequence: {
      sequencer: class {
        async shard(files) { return files; }
        async sort(files) { return [...files].sort((a, b) => a.moduleId.localeCompare(b.moduleId)); }
      },
    },
  },
};
`,
  );
  const { REGISTRAR_TEST_LEFTOVERS: _report, ...env } = process.env;
  const { code, stdout, stderr } = await runProgram(
    process.execPath,
    [join(REPO, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.config.mjs'],
    env,
    dir,
  );
  return { code, output: `${stdout}${stderr}` };
}

describe('a file that leaves something running in a shared fork', () => {
  /** Runs `first` before a clean file: the run fails, blaming `first` for `left`. */
  async function expectBlamed(first: string, left: string): Promise<void> {
    const { code, output } = await runPair(first);
    expect(code, output).toBe(1);
    expect(output).toContain(
      `a-first.test.js left ${left} running in its shared fork (found as b-next.test.js began)`,
    );
  }

  it('fails the run, naming that file and what it left', async () => {
    await expectBlamed(
      "it('listens and never closes', async () => {\n" +
        "  const { createServer } = await import('node:net');\n" +
        '  await new Promise((listening) => createServer().listen(0, listening));\n' +
        '});\n',
      'TCPServerWrap +1',
    );
  }, 60_000);

  it('fails the run for a repeating timer it never cleared, naming that file', async () => {
    await expectBlamed(
      "it('sets an interval and never clears it', () => { setInterval(() => {}, 60_000); });\n",
      'Interval +1',
    );
  }, 60_000);

  it('lets a file through that clears its repeating timer in its own hook', async () => {
    const { code, output } = await runPair(
      'let timer;\nbeforeAll(() => { timer = setInterval(() => {}, 60_000); });\n' +
        'afterAll(() => clearInterval(timer));\n' +
        "it('ticks', () => expect(timer).toBeDefined());\n",
    );
    expect(code, output).toBe(0);
  }, 60_000);
});

describe('the ledger of repeating timers', () => {
  // A stand-in for the global timer functions: the real ones, on an object of its own, so
  // this file's own timers stay out of the ledger under test.
  const ledgerOn = () => {
    const timers = { setInterval, clearInterval, clearTimeout };
    return { timers, ledger: keepIntervalLedger(timers) };
  };

  it('names the file that set a live one, and forgets one cleared either way or by its id', () => {
    const { timers, ledger } = ledgerOn();
    ledger.file = 'a.test.ts';
    const kept = timers.setInterval(() => {}, 60_000);
    const byInterval = timers.setInterval(() => {}, 60_000);
    const byTimeout = timers.setInterval(() => {}, 60_000);
    const byId = timers.setInterval(() => {}, 60_000);
    try {
      timers.clearInterval(byInterval);
      timers.clearTimeout(byTimeout);
      timers.clearInterval(byId[Symbol.toPrimitive]());
      expect(intervalsLeft(ledger, 'b.test.ts')).toEqual(new Map([['a.test.ts', 'Interval +1']]));
      // Its own file is not blamed for it while it runs.
      expect(intervalsLeft(ledger, 'a.test.ts')).toEqual(new Map());
    } finally {
      timers.clearInterval(kept);
    }
    expect(intervalsLeft(ledger, 'b.test.ts')).toEqual(new Map());
  });

  it("leaves out an unref'd one, and gives one set between two files to the next", () => {
    const { timers, ledger } = ledgerOn();
    ledger.file = 'a.test.ts';
    const unrefd = timers.setInterval(() => {}, 60_000).unref();
    ledger.file = undefined;
    const atImport = timers.setInterval(() => {}, 60_000);
    try {
      expect(intervalsLeft(ledger, 'b.test.ts')).toEqual(new Map());
      expect(ledger.live.get(atImport)).toBe('b.test.ts');
      expect(intervalsLeft(ledger, 'c.test.ts')).toEqual(new Map([['b.test.ts', 'Interval +1']]));
    } finally {
      timers.clearInterval(unrefd);
      timers.clearInterval(atImport);
    }
  });
});

describe('what the check counts', () => {
  it('counts a listening server, and names each kind there is more of', async () => {
    const before = activeResources();
    const server = createServer();
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    try {
      expect(leftOver(before, activeResources())).toEqual(['TCPServerWrap +1']);
    } finally {
      await new Promise<void>((closed) => server.close(() => closed()));
    }
    // A closed server's handle goes a turn of the event loop after its callback: the check
    // waits for it the same way.
    await vi.waitFor(() => expect(leftOver(before, activeResources())).toEqual([]), {
      timeout: 2_000,
      interval: 10,
    });
  });

  it('leaves one-shot timers out: vitest keeps its own', () => {
    const before = activeResources();
    const timer = setTimeout(() => {}, 60_000);
    try {
      expect(leftOver(before, activeResources())).toEqual([]);
    } finally {
      clearTimeout(timer);
    }
  });
});
