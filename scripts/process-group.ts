import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * A detached child tied to this process's life: when this process ends (normally, by a
 * signal, or by SIGKILL, which nothing can catch), the child's whole process group ends too.
 * `npm test` runs each step this way, and test fixtures that start a program in a group of
 * its own (to Ctrl-C it as a terminal does) tie it the same way, so stopping a test run at any
 * moment leaves nothing running.
 */
const WATCHDOG = fileURLToPath(new URL('./process-group-watchdog.ts', import.meta.url));

export interface GroupGuard {
  /**
   * Ends what is left of the group now (SIGTERM, then SIGKILL after the grace period) and
   * stops watching. Call it once the group's leader has exited, or to give up on the group.
   */
  release(): void;
}

/**
 * Watches the process group `child` leads (it must have been spawned with `detached: true`).
 * `graceMs`: how long the group gets between SIGTERM and SIGKILL.
 */
export function guardProcessGroup(child: ChildProcess, graceMs = 5_000): GroupGuard {
  if (child.pid === undefined) return { release: () => undefined };
  const watchdog = spawn(process.execPath, [WATCHDOG, String(child.pid), String(graceMs)], {
    stdio: ['pipe', 'ignore', 'inherit'],
    detached: true,
  });
  // Neither the watchdog nor its pipe may keep this process alive: it is there for when this
  // process is gone.
  watchdog.unref();
  watchdog.stdin?.on('error', () => undefined);
  (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      watchdog.stdin?.end();
    },
  };
}

/** Sends `signal` to the process group `child` leads; nothing when it is gone. */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}
