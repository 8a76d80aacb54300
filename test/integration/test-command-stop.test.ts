import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * `npm test` stopped at any moment leaves nothing running. The run under test is `npm test`
 * on test/integration/spawned-tree-fixture.test.ts, which starts a local runtime in the test
 * process's group and another through `npm start` in a group of its own (the upgrade tests'
 * way, which once left a runtime running under PID 1). Once both run, at a random moment, the
 * run gets Ctrl-C (SIGINT to npm's process group, as a terminal sends it: npm itself ignores a
 * SIGINT sent to it alone) or npm (the top of the tree) gets SIGKILL; then no process of that
 * run may be left. Every process of the run carries a mark in its environment, which is how they are
 * found (PIDs alone would miss a process that left its parent's group).
 */
const MARK_VARIABLE = 'WORKLOAD_REGISTRAR_TREE_MARK';

/** PIDs of live processes whose environment carries `mark` (a zombie shows no environment). */
function markedProcesses(mark: string): number[] {
  const needle = `${MARK_VARIABLE}=${mark}`;
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(needle)) {
        found.push(Number(name));
      }
    } catch {
      // Gone, or not ours to read.
    }
  }
  return found;
}

function describeProcess(pid: number): string {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ')}`;
  } catch {
    return `${pid} (gone)`;
  }
}

/** The environment of a terminal: none of this test run's vitest or results settings. */
function terminalEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(VITEST|REGISTRAR_TEST_RESULTS$|npm_)/.test(name)) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

async function waitFor(condition: () => boolean, timeoutMs: number, what: () => string) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what()} (after ${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const marks: string[] = [];
const dirs: string[] = [];
const groups: ChildProcess[] = [];

afterEach(() => {
  // A failed test still leaves nothing: whatever carries a mark is killed.
  for (const mark of marks.splice(0)) {
    for (const pid of markedProcesses(mark)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
  }
  for (const group of groups.splice(0)) {
    try {
      process.kill(-(group.pid as number), 'SIGKILL');
    } catch {
      // Gone, as it should be.
    }
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function stopAtRandom(signal: 'SIGINT' | 'SIGKILL') {
  const mark = randomUUID();
  marks.push(mark);
  const dir = mkdtempSync(join(tmpdir(), 'test-command-stop-'));
  dirs.push(dir);
  const ready = join(dir, 'ready.json');
  let output = '';
  const npm: ChildProcess = spawn(
    'npm',
    ['test', '--', 'test/integration/spawned-tree-fixture.test.ts'],
    {
      env: terminalEnv({ [MARK_VARIABLE]: mark, REGISTRAR_SPAWNED_TREE_READY: ready }),
      stdio: ['ignore', 'pipe', 'pipe'],
      // A terminal's foreground job: the group Ctrl-C goes to.
      detached: true,
    },
  );
  groups.push(npm);
  npm.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => npm.once('exit', resolve));
  await waitFor(
    () => existsSync(ready) || npm.exitCode !== null,
    150_000,
    () => `the run never started both runtimes:\n${output}`,
  );
  expect(existsSync(ready), output).toBe(true);
  const started = markedProcesses(mark).length;
  // Two runtimes, npm start's npm and shell, the vitest worker, vitest, npm test and more.
  expect(started).toBeGreaterThanOrEqual(6);

  const delayMs = Math.floor(Math.random() * 2_000);
  await new Promise((resolve) => setTimeout(resolve, delayMs));
  if (signal === 'SIGINT') process.kill(-(npm.pid as number), 'SIGINT');
  else npm.kill('SIGKILL');
  await exited;
  await waitFor(
    () => markedProcesses(mark).length === 0,
    60_000,
    () =>
      `${signal} to npm test ${delayMs} ms after both runtimes ran left:\n${markedProcesses(mark)
        .map(describeProcess)
        .join('\n')}\noutput:\n${output}`,
  );
  return { started, delayMs };
}

describe('npm test stopped at a random moment', () => {
  it('leaves no process running after Ctrl-C', async () => {
    const { started } = await stopAtRandom('SIGINT');
    expect(started).toBeGreaterThan(0);
  }, 240_000);

  it('leaves no process running after kill -9 of npm', async () => {
    const { started } = await stopAtRandom('SIGKILL');
    expect(started).toBeGreaterThan(0);
  }, 240_000);
});
