import { randomUUID } from 'node:crypto';
import { link, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isExited, readProcessStat } from './process-state.ts';

/** Who holds a data dir: written to `<dataDir>/runtime.lock` for the next runtime to name. */
export interface LockHolder {
  pid: number;
  /** The gateway's port; the requested one (0: any) until the gateway listens. */
  port: number;
  /** ws://host:port once the gateway listens. */
  url?: string;
  /** Tells this holder's own file from a later holder's with a reused PID. */
  owner: string;
  /**
   * The holder process's start time (`/proc/<pid>/stat` field 22; unset off Linux): after a
   * `kill -9` and a reboot or a busy machine, another process may get the same PID, and must
   * not count as the registrar that held the dir.
   */
  startTime?: string;
}

export const LOCK_FILE = 'runtime.lock';

/** Another runtime, still running, uses this data dir. */
export class DataDirInUseError extends Error {
  readonly dataDir: string;
  readonly holder: LockHolder;

  constructor(dataDir: string, holder: LockHolder) {
    super(
      `the data dir ${dataDir} is in use by another registrar (PID ${holder.pid}, ${
        holder.url ? `port ${holder.port}, ${holder.url}` : `port ${holder.port}, starting`
      }): stop that one, or start this one with --data-dir <another dir> or --memory ` +
        `(if no registrar runs, remove ${join(dataDir, LOCK_FILE)})`,
    );
    this.name = 'DataDirInUseError';
    this.dataDir = dataDir;
    this.holder = holder;
  }
}

export interface DataDirLock {
  path: string;
  /** The holder a stale lock named: its process is gone, so this runtime took the dir over. */
  tookOverFrom?: LockHolder;
  /** Records where this runtime listens, once it does. */
  update(listening: { port: number; url: string }): Promise<void>;
  /** Removes the lock file if it is still this runtime's. */
  release(): Promise<void>;
}

/**
 * Takes `<dataDir>` for this process. dynalite keeps the registry in a LevelDB under it that
 * one process at a time can open: a second runtime on the same dir used to start and then
 * crash on its first request with `Database is closed`. The lock file is created exclusively
 * (`wx`); one left by a process that is gone (killed, crashed) is taken over.
 */
export async function lockDataDir(dataDir: string, port: number): Promise<DataDirLock> {
  await mkdir(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  const startTime = readProcessStat(process.pid)?.startTime;
  let holder: LockHolder = {
    pid: process.pid,
    port,
    owner: randomUUID(),
    ...(startTime ? { startTime } : {}),
  };
  let tookOverFrom: LockHolder | undefined;
  // Written whole beside the lock, then linked into place: link fails when the lock exists,
  // and a reader never sees half a file.
  const draft = `${path}.${holder.owner}`;
  await writeFile(draft, `${JSON.stringify(holder)}\n`);
  try {
    // Twice at most: once as found, once after removing a stale lock.
    for (let attempt = 0; ; attempt++) {
      try {
        await link(draft, path);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
      }
      const existing = await readHolder(path);
      if (existing && isRunning(existing)) throw new DataDirInUseError(dataDir, existing);
      tookOverFrom = existing;
      await rm(path, { force: true });
    }
  } finally {
    await rm(draft, { force: true });
  }
  const ours = async () => (await readHolder(path))?.owner === holder.owner;
  return {
    path,
    ...(tookOverFrom ? { tookOverFrom } : {}),
    update: async ({ port: listening, url }) => {
      if (!(await ours())) return;
      holder = { ...holder, port: listening, url };
      // Renamed into place: a reader never sees half a file.
      const next = `${path}.${holder.owner}`;
      await writeFile(next, `${JSON.stringify(holder)}\n`);
      await rename(next, path);
    },
    release: async () => {
      if (await ours()) await rm(path, { force: true });
    },
  };
}

async function readHolder(path: string): Promise<LockHolder | undefined> {
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as Partial<LockHolder>;
    return typeof parsed.pid === 'number' && Number.isInteger(parsed.pid) && parsed.pid > 0
      ? {
          pid: parsed.pid,
          port: typeof parsed.port === 'number' ? parsed.port : 0,
          owner: String(parsed.owner),
          ...(typeof parsed.url === 'string' ? { url: parsed.url } : {}),
          ...(typeof parsed.startTime === 'string' ? { startTime: parsed.startTime } : {}),
        }
      : undefined;
  } catch {
    // Gone since, or not a lock a runtime wrote: nobody to name, so stale.
    return undefined;
  }
}

/**
 * Whether the registrar that wrote the lock still runs. Signal 0 checks that the PID exists
 * (EPERM: it does, under another user), but after `kill -9` that is not enough: a runtime
 * whose parent has not reaped it yet (a shell, a test runner, a container without an init) is
 * a zombie that answers signal 0, and a PID reused by another process answers too. Both would
 * keep `npm start` refusing until someone removed the lock by hand. Where /proc is missing
 * (macOS) signal 0 decides alone.
 */
function isRunning(holder: LockHolder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = readProcessStat(holder.pid);
  if (stat === undefined) return true;
  if (isExited(stat)) return false;
  return holder.startTime === undefined || holder.startTime === stat.startTime;
}
