import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * vitest globalSetup: one temporary directory for the whole run, made the test processes'
 * TMPDIR (the forks inherit it), and removed when the run ends, passed or failed. Whatever a
 * test or a library puts in the temp dir (CDK's cdk.out, TLS keys, config files, runtime data
 * dirs) goes with it, also when a test fails before its own cleanup.
 */
export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'registrar-tests-'));
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    rmSync(dir, { recursive: true, force: true });
  };
}
