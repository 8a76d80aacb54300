import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const HOOK = new URL('../../scripts/ts-cache.js', import.meta.url).pathname;
const CLI = new URL('../../bin/registrar.js', import.meta.url).pathname;

/**
 * scripts/ts-cache.js: what Node's type stripping makes of each module, kept on disk by source.
 * Real Node processes over a scratch package; each run gets the scratch dir as its TMPDIR, so
 * the cache is the one this test looks into.
 */
let dir: string;
let cacheRoot: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ts-cache-'));
  cacheRoot = join(dir, 'tmp');
  mkdirSync(cacheRoot);
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function node(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, args, {
      cwd: dir,
      // Not npm test's own compile cache (NODE_COMPILE_CACHE): the default, under TMPDIR.
      env: { ...withoutCompileCache(process.env), TMPDIR: cacheRoot, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

function withoutCompileCache(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_COMPILE_CACHE: _, ...rest } = env;
  return rest;
}

const cacheDir = () => join(cacheRoot, 'node-compile-cache', 'registrar-ts');
const cached = () => readdirSync(cacheDir());
/** The name the cache gives a module's stripped source (scripts/ts-cache.js). */
const keyOf = (source: string) =>
  `${createHash('sha256').update(process.version).update('\0').update(source).digest('base64url')}.js`;

describe('the stripped-types cache', () => {
  it('serves a module from the cache once stripped, and a changed module anew', async () => {
    writeFileSync(join(dir, 'says.ts'), "export const says: string = 'one';\n");
    writeFileSync(join(dir, 'main.ts'), "import { says } from './says.ts';\nconsole.log(says);\n");
    const first = await node(['--import', HOOK, 'main.ts']);
    expect(first).toEqual({ code: 0, stdout: 'one\n', stderr: '' });
    expect(cached()).toHaveLength(2);

    const again = await node(['--import', HOOK, 'main.ts']);
    expect(again.stdout).toBe('one\n');
    expect(cached()).toHaveLength(2);

    // Keyed by the source: a changed module is stripped again, never served stale.
    writeFileSync(join(dir, 'says.ts'), "export const says: string = 'two';\n");
    expect((await node(['--import', HOOK, 'main.ts'])).stdout).toBe('two\n');
    expect(cached()).toHaveLength(3);
  });

  it('keeps lines and columns: a stack trace points where it does without the cache', async () => {
    writeFileSync(
      join(dir, 'throws.ts'),
      'interface Shape {\n  side: number;\n}\nconst shape: Shape = { side: 1 };\nif (shape.side > 0) throw new Error(String(shape.side));\n',
    );
    const withCache = await node(['--import', HOOK, 'throws.ts']);
    const without = await node(['throws.ts']);
    expect(withCache.code).not.toBe(0);
    const at = (stderr: string) => stderr.match(/throws\.ts:(\d+):(\d+)/)?.slice(1);
    expect(at(withCache.stderr)).toEqual(['5', '27']);
    expect(at(withCache.stderr)).toEqual(at(without.stderr));
  });

  it("leaves a file Node cannot strip to Node's own error", async () => {
    writeFileSync(join(dir, 'broken.ts'), 'enum Colour { Red }\nconsole.log(Colour.Red);\n');
    const withCache = await node(['--import', HOOK, 'broken.ts']);
    const without = await node(['broken.ts']);
    expect(withCache.code).not.toBe(0);
    expect(withCache.stderr).toContain('ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX');
    expect(without.stderr).toContain('ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX');
  });

  it('is off with NODE_DISABLE_COMPILE_CACHE=1', async () => {
    writeFileSync(join(dir, 'off.ts'), "const off: string = 'off';\nconsole.log(off);\n");
    const before = cached().length;
    const result = await node(['--import', HOOK, 'off.ts'], { NODE_DISABLE_COMPILE_CACHE: '1' });
    expect(result.stdout).toBe('off\n');
    expect(cached()).toHaveLength(before);
  });

  it('lets the CLI from a checkout print exactly what it prints without it', async () => {
    const withCache = await node([CLI, 'completion', 'bash']);
    const without = await node([CLI, 'completion', 'bash'], { NODE_DISABLE_COMPILE_CACHE: '1' });
    expect(withCache.code).toBe(0);
    expect(withCache.stderr).toBe('');
    expect(withCache.stdout).toBe(without.stdout);
    expect(withCache.stdout.length).toBeGreaterThan(100);
  });

  describe('a module planted in the cache', () => {
    const source = "const who: string = 'the source';\nconsole.log(who);\n";
    const plant = () => {
      writeFileSync(join(dir, 'plant.ts'), source);
      writeFileSync(join(cacheDir(), keyOf(source)), "console.log('planted');\n");
    };

    it('is served from a directory only this user may write (what makes the cache work)', async () => {
      chmodSync(cacheDir(), 0o700);
      plant();
      expect((await node(['--import', HOOK, 'plant.ts'])).stdout).toBe('planted\n');
    });

    it('is not served once others may write to the directory', async () => {
      plant();
      chmodSync(cacheDir(), 0o777);
      try {
        expect((await node(['--import', HOOK, 'plant.ts'])).stdout).toBe('the source\n');
      } finally {
        chmodSync(cacheDir(), 0o700);
      }
    });

    it.skipIf(process.getuid?.() !== 0)(
      'is not served from a directory another user owns (run as root: root runs nothing they wrote)',
      async () => {
        plant();
        chownSync(cacheDir(), 65534, 65534);
        try {
          expect((await node(['--import', HOOK, 'plant.ts'])).stdout).toBe('the source\n');
        } finally {
          chownSync(cacheDir(), 0, 0);
        }
      },
    );
  });
});
