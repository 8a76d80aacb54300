import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * `npm start` runs the local runtime through scripts/async-context-frame.js, which restarts the
 * process with `--experimental-async-context-frame` where this Node has that flag (Node 22), so
 * that the runtime's per-invocation AsyncLocalStorage does not hook every promise. Played here
 * with a probe in place of the runtime: what the process looks like after the restart.
 */

const FLAG = '--experimental-async-context-frame';
const dir = mkdtempSync(join(tmpdir(), 'registrar-async-frame-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const probe = join(dir, 'probe.mjs');
writeFileSync(
  probe,
  `import { AsyncLocalStorage } from 'node:async_hooks';
const storage = new AsyncLocalStorage();
const seen = await Promise.all(
  ['a', 'b', 'c'].map((id, i) =>
    storage.run(id, async () => {
      await new Promise((resolve) => setTimeout(resolve, 10 * (3 - i)));
      await null;
      return storage.getStore();
    }),
  ),
);
console.log(JSON.stringify({ pid: process.pid, execArgv: process.execArgv, args: process.argv.slice(2), seen }));
`,
);

function run(env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(
    process.execPath,
    ['--import', './scripts/async-context-frame.js', probe, 'one', '--two'],
    { cwd: process.cwd(), env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<{
    pid: number | undefined;
    code: number | null;
    stdout: string;
    stderr: string;
  }>((resolve) => child.once('close', (code) => resolve({ pid: child.pid, code, stdout, stderr })));
}

const supported = process.allowedNodeEnvironmentFlags.has(FLAG);

describe('npm start with AsyncContextFrame', () => {
  it('is how package.json starts the runtime', () => {
    const scripts = JSON.parse(readFileSync('package.json', 'utf8')).scripts as Record<
      string,
      string
    >;
    expect(scripts.start).toContain(
      '--import ./scripts/async-context-frame.js infra/local/main.ts',
    );
  });

  it('restarts as the same process, arguments, stdio and all, with the flag where Node has it', async () => {
    const result = await run();
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const seen = JSON.parse(result.stdout) as {
      pid: number;
      execArgv: string[];
      args: string[];
      seen: string[];
    };
    // The same PID: `kill`, Ctrl-C and a parent's watch still reach the runtime itself.
    expect(seen.pid).toBe(result.pid);
    expect(seen.args).toEqual(['one', '--two']);
    expect(seen.execArgv.includes(FLAG)).toBe(supported);
    expect(seen.execArgv).toContain('./scripts/async-context-frame.js');
    // Each invocation still sees its own scope across awaits.
    expect(seen.seen).toEqual(['a', 'b', 'c']);
  });

  it.skipIf(!supported)('does not restart when NODE_OPTIONS already sets the flag', async () => {
    const result = await run({ ...process.env, NODE_OPTIONS: FLAG });
    const seen = JSON.parse(result.stdout) as { execArgv: string[] };
    expect(seen.execArgv).not.toContain(FLAG);
  });
});
