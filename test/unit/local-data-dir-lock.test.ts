import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataDirInUseError, LOCK_FILE, lockDataDir } from '../../infra/local/data-dir-lock.ts';

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
});
