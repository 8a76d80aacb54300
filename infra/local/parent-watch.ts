import { readFileSync } from 'node:fs';

/**
 * `npm start &`, then `kill %1`: the shell's job is npm, and killing npm left this runtime
 * running, reparented, holding its port and its data dir's lock. The runtime follows the
 * process that started it instead, and stops as on Ctrl-C when it is gone. npm runs the
 * script through `sh -c`, which outlives a `kill -9` of npm: when the parent is that shell and
 * npm is its parent, npm is followed too (read from /proc, so on Linux). Started by init or a
 * service manager (parent PID 1) it follows nothing.
 */
export function watchParent(
  onParentExit: (parentPid: number) => void,
  intervalMs = 1000,
): () => void {
  const parent = process.ppid;
  if (parent <= 1) return () => undefined;
  const npm = npmAbove(parent);
  const timer = setInterval(() => {
    // process.ppid asks the kernel each time: it changes when the parent exits. The shell's
    // own parent changes when npm exits (PID reuse cannot fool a comparison of parents).
    const gone =
      process.ppid !== parent
        ? parent
        : npm !== undefined && parentOf(parent) !== npm
          ? npm
          : undefined;
    if (gone === undefined) return;
    clearInterval(timer);
    onParentExit(gone);
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** npm's PID when `pid` is the shell npm runs a script in; undefined otherwise. */
function npmAbove(pid: number): number | undefined {
  const shell = read(`/proc/${pid}/comm`)?.trim();
  if (shell !== 'sh' && shell !== 'dash' && shell !== 'bash') return undefined;
  const grandparent = parentOf(pid);
  if (grandparent === undefined || grandparent <= 1) return undefined;
  const command = read(`/proc/${grandparent}/cmdline`)?.split('\0') ?? [];
  return command.some((arg) => /(^|\/)npm(-cli\.js)?$/.test(arg) || arg.startsWith('npm '))
    ? grandparent
    : undefined;
}

/** The parent of `pid` from /proc/<pid>/stat (its 4th field, after the command in parens). */
function parentOf(pid: number): number | undefined {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const parent = Number(fields[1]);
  return Number.isInteger(parent) ? parent : undefined;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
