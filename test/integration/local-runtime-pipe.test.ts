import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type RuntimeProcess, startRuntimeProcess } from '../fixtures/local-runtime-process.ts';

/**
 * `npm start | tee log`, then Ctrl-C: the terminal stops `tee` too, so the runtime's shutdown
 * lines go to a pipe nobody reads (EPIPE). It used to crash there with a stack trace, before
 * closing its connections, and left the data dir locked. The reader is played by this test:
 * it closes its end of the runtime's stdout, then sends SIGINT.
 */
let dataDir: string;
let runtime: RuntimeProcess | undefined;

beforeEach(() => {
  dataDir = join(mkdtempSync(join(tmpdir(), 'registrar-pipe-')), 'data');
});
afterEach(async () => {
  await runtime?.stop();
  rmSync(dirname(dataDir), { recursive: true, force: true });
});

describe('npm start piped into a program that stops first', () => {
  it('stops cleanly on Ctrl-C: exit 0, no stack trace, the data dir released', async () => {
    runtime = await startRuntimeProcess(['--data-dir', dataDir]);
    expect(existsSync(join(dataDir, 'runtime.lock'))).toBe(true);
    runtime.child.stdout?.destroy();
    const code = await runtime.stop();
    expect(runtime.stderr()).toBe('');
    expect(code).toBe(0);
    expect(existsSync(join(dataDir, 'runtime.lock'))).toBe(false);
  }, 60_000);
});
