import { readFileSync } from 'node:fs';

/**
 * What Linux says about a process in `/proc/<pid>/stat`: its state letter and its start time
 * (clock ticks after boot, field 22). Undefined where there is no procfs (macOS) or the process
 * is gone. The name (field 2) is in parentheses and may itself hold spaces and ')': the fields
 * are read after the last ')'.
 */
export interface ProcessStat {
  /** `R`, `S`, `D`, ... ; `Z` a zombie (exited, not yet reaped by its parent), `X` dead. */
  state: string;
  startTime: string;
}

export function readProcessStat(pid: number): ProcessStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // After the name: field 3 (state) is the first, field 22 (starttime) the twentieth.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const [state] = fields;
  const startTime = fields[19];
  return state && startTime ? { state, startTime } : undefined;
}

/** Exited, though its PID is still taken until the parent reaps it. */
export function isExited(stat: ProcessStat): boolean {
  return stat.state === 'Z' || stat.state === 'X';
}
