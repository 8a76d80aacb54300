import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm start &` then `kill %1`: the job is npm, and the runtime it started must not outlive it
 * (reparented, it held the port and the data dir's lock). Real npm, real signals.
 */
const dir = mkdtempSync(join(tmpdir(), 'runtime-parent-'));
const pids: number[] = [];
afterAll(() => {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  rmSync(dir, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until<T>(read: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('npm start in the background', () => {
  it.each(['SIGTERM', 'SIGKILL'] as const)(
    'stops, closing its store and releasing the lock, when npm gets %s',
    async (signal) => {
      const dataDir = join(dir, signal);
      const npm = spawn('npm', ['start', '--', '--port', '0', '--data-dir', dataDir], {
        cwd: process.cwd(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      npm.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const lock = join(dataDir, 'runtime.lock');
      const runtimePid = await until(
        () => {
          if (!output.includes('Press Ctrl-C to stop.') || !existsSync(lock)) return undefined;
          return (JSON.parse(readFileSync(lock, 'utf8')) as { pid: number }).pid;
        },
        60_000,
        `npm start's banner and lock; output so far:\n${output}`,
      );
      pids.push(runtimePid);
      expect(runtimePid).not.toBe(npm.pid);

      // `kill %1` (SIGTERM: npm passes it to its script's shell, which dies of it) or
      // `kill -9 %1` (npm dies alone; the shell lives on).
      npm.kill(signal);

      await until(() => (alive(runtimePid) ? undefined : true), 20_000, 'the runtime to exit');
      expect(existsSync(lock)).toBe(false);
      expect(existsSync(join(dataDir, 'local.json'))).toBe(false);
    },
    120_000,
  );
});
