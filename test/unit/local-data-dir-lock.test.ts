import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataDirInUseError, LOCK_FILE, lockDataDir } from '../../infra/local/data-dir-lock.ts';
import { readProcessStat } from '../../infra/local/process-state.ts';

let dataDir: string;
beforeEach(() => {
  dataDir = join(mkdtempSync(join(tmpdir(), 'registrar-lock-')), 'data');
});
afterEach(() => rmSync(join(dataDir, '..'), { recursive: true, force: true }));

/** The PID of a process that has exited: nothing runs under it now. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(child.stdout);
}

const lockFile = () => join(dataDir, LOCK_FILE);
const holder = () => JSON.parse(readFileSync(lockFile(), 'utf8'));

describe('lockDataDir', () => {
  it('creates the dir and records this process, then where it listens', async () => {
    const lock = await lockDataDir(dataDir, 0);
    expect(holder()).toMatchObject({ pid: process.pid, port: 0 });
    await lock.update({ port: 8123, url: 'ws://127.0.0.1:8123' });
    expect(holder()).toMatchObject({ pid: process.pid, port: 8123, url: 'ws://127.0.0.1:8123' });
    await lock.release();
    expect(existsSync(lockFile())).toBe(false);
  });

  it('refuses while the holder runs, naming its PID and port, and changes nothing', async () => {
    const first = await lockDataDir(dataDir, 8080);
    await first.update({ port: 8080, url: 'ws://127.0.0.1:8080' });
    const before = readFileSync(lockFile(), 'utf8');
    const refused = await lockDataDir(dataDir, 9090).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DataDirInUseError);
    expect((refused as Error).message).toMatch(
      new RegExp(
        `in use by another registrar \\(PID ${process.pid}, port 8080, ws://127\\.0\\.0\\.1:8080\\)`,
      ),
    );
    expect(readFileSync(lockFile(), 'utf8')).toBe(before);
    await first.release();
  });

  it('takes over a lock whose process is gone', async () => {
    const gone = deadPid();
    await lockDataDir(dataDir, 0).then((lock) => lock.release());
    writeFileSync(lockFile(), JSON.stringify({ pid: gone, port: 8080, owner: 'old' }));
    const lock = await lockDataDir(dataDir, 0);
    expect(lock.tookOverFrom).toMatchObject({ pid: gone, port: 8080 });
    expect(holder().pid).toBe(process.pid);
    await lock.release();
  });

  it('takes over a lock file no runtime wrote (empty, not JSON)', async () => {
    await lockDataDir(dataDir, 0).then((lock) => lock.release());
    writeFileSync(lockFile(), '');
    const lock = await lockDataDir(dataDir, 0);
    expect(lock.tookOverFrom).toBeUndefined();
    expect(holder().pid).toBe(process.pid);
    await lock.release();
  });

  it("never removes or rewrites a lock that is no longer this runtime's", async () => {
    const lock = await lockDataDir(dataDir, 0);
    const other = JSON.stringify({ pid: process.pid, port: 1, owner: 'someone-else' });
    writeFileSync(lockFile(), other);
    await lock.update({ port: 2, url: 'ws://127.0.0.1:2' });
    await lock.release();
    expect(readFileSync(lockFile(), 'utf8')).toBe(other);
  });

  it('refuses while the holder runs with the start time it recorded', async () => {
    const startTime = readProcessStat(process.pid)?.startTime;
    expect(startTime).toMatch(/^\d+$/);
    await lockDataDir(dataDir, 0).then((lock) => lock.release());
    writeFileSync(
      lockFile(),
      JSON.stringify({ pid: process.pid, port: 8080, owner: 'x', startTime }),
    );
    await expect(lockDataDir(dataDir, 0)).rejects.toBeInstanceOf(DataDirInUseError);
  });

  it('takes over a lock whose PID now belongs to another process (started at another time)', async () => {
    await lockDataDir(dataDir, 0).then((lock) => lock.release());
    // This process runs, but it is not the one that wrote the lock: that one started earlier.
    writeFileSync(
      lockFile(),
      JSON.stringify({ pid: process.pid, port: 8080, owner: 'old', startTime: '1' }),
    );
    const lock = await lockDataDir(dataDir, 0);
    expect(lock.tookOverFrom).toMatchObject({ pid: process.pid, startTime: '1' });
    expect(holder().owner).not.toBe('old');
    await lock.release();
  });

  it('takes over a lock whose holder was killed and is a zombie its parent has not reaped', async () => {
    // `sh` starts a child, then becomes `sleep`, which never reaps it. The child exits only
    // once its parent is `sleep`: had it exited before the exec, the shell could reap it first
    // (it did on a loaded machine), and there would be no zombie.
    const child = 'while [ "$(cat /proc/$PPID/comm)" != sleep ]; do sleep 0.01; done';
    const parent = spawn('sh', ['-c', `sh -c '${child}' & echo $!; exec sleep 60`], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const exited = new Promise((resolve) => parent.once('exit', resolve));
    try {
      const zombie = await new Promise<number>((resolve, reject) => {
        parent.stdout.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim())));
        parent.once('error', reject);
      });
      await until(() => readProcessStat(zombie)?.state === 'Z');
      // Signal 0 alone would call it running.
      expect(() => process.kill(zombie, 0)).not.toThrow();
      await lockDataDir(dataDir, 0).then((lock) => lock.release());
      writeFileSync(lockFile(), JSON.stringify({ pid: zombie, port: 8080, owner: 'old' }));
      const lock = await lockDataDir(dataDir, 0);
      expect(lock.tookOverFrom).toMatchObject({ pid: zombie });
      await lock.release();
    } finally {
      parent.kill('SIGKILL');
      await exited;
    }
  });
});

/** Waits on a condition, checking every 10 ms, for at most 20 s (a busy machine is slow). */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 20 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
