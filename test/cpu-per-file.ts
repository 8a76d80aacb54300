import { appendFileSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';

/**
 * vitest setup file, on when `REGISTRAR_TEST_CPU` names a file (vitest.config.ts): appends one
 * JSON line per test file with the CPU its fork spent (user + system, its own and that of the
 * child processes it waited for: agents, runtimes, CLIs, Chromium) and its wall time. A file in a
 * fork of its own is charged the fork's whole CPU, imports included; a file in a shared fork
 * (test/shared-process.ts) the CPU since the file before it in that fork ended.
 * `node test/cpu-report.ts <file>` sums and ranks them (docs/contributing.md, "CI stages").
 */
const out = process.env.REGISTRAR_TEST_CPU as string;

/** Seconds of CPU of this process and its waited-for children, from /proc (Linux). */
function cpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
  // After the command: state is field 0, then utime 11, stime 12, cutime 13, cstime 14 (ticks).
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i] ?? 0), 0);
  return ticks / 100;
}

let wallStart = 0;
beforeAll(() => {
  wallStart = Date.now();
});
/** Where the previous file of a shared fork ended (this module runs again for each file). */
const mark = globalThis as { registrarCpuMark?: number };
afterAll(() => {
  const path = expect.getState().testPath ?? 'unknown';
  const now = cpuSeconds();
  const since = mark.registrarCpuMark ?? 0;
  mark.registrarCpuMark = now;
  const line = {
    file: relative(process.cwd(), path),
    backend: process.env.REGISTRAR_TEST_BACKEND ?? 'dynalite',
    cpuS: Math.round((now - since) * 100) / 100,
    wallS: (Date.now() - wallStart) / 1000,
    upS: process.uptime(),
  };
  appendFileSync(out, `${JSON.stringify(line)}\n`);
});
