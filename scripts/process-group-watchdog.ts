/**
 * `node scripts/process-group-watchdog.ts <pgid> [graceMs]`: ends a process group once the
 * process that started this watchdog is gone, however it went.
 *
 * A child spawned `detached` leads a process group (and session) of its own, so nothing sends
 * it the signal that stops its parent: a `kill -9` of the parent, or a Ctrl-C of a test run,
 * left the local runtime of an older release running under PID 1. Linux's PR_SET_PDEATHSIG
 * is not reachable from Node, so a pipe does its job: the parent holds the write end of this
 * process's stdin, and the kernel closes it when the parent dies (SIGKILL included). At end
 * of file the group gets SIGTERM, then SIGKILL after `graceMs` if anything of it still runs.
 * The watchdog itself runs in a group of its own: the signals it sends never reach it.
 */

const pgid = Number(process.argv[2]);
const graceMs = Number(process.argv[3] ?? 5_000);
if (!Number.isInteger(pgid) || pgid <= 1 || !Number.isFinite(graceMs) || graceMs < 0) {
  process.stderr.write(
    `process-group-watchdog: usage: process-group-watchdog.ts <pgid> [graceMs], got ${JSON.stringify(process.argv.slice(2))}\n`,
  );
  process.exit(2);
}

/** Whether any process of the group is left (EPERM: it is, though not ours to signal). */
function groupAlive(): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signalGroup(signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Gone meanwhile.
  }
}

let ending = false;
async function endGroup(): Promise<void> {
  if (ending) return;
  ending = true;
  if (groupAlive()) {
    signalGroup('SIGTERM');
    const deadline = Date.now() + graceMs;
    while (groupAlive() && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // A runtime that ignores SIGTERM for seconds (a stuck shutdown) must still go.
    if (groupAlive()) signalGroup('SIGKILL');
  }
  process.exit(0);
}

// The terminal's Ctrl-C and hang-up are for the processes it runs, not for their watchdog.
process.on('SIGINT', () => undefined);
process.on('SIGHUP', () => undefined);
process.stdin.on('data', () => undefined);
process.stdin.on('end', () => void endGroup());
process.stdin.on('close', () => void endGroup());
process.stdin.on('error', () => void endGroup());
