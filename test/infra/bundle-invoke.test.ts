import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invokeBuiltBundles } from '../../bench/bundle-pairs.ts';
import { bundleFunction } from '../../bench/bundle-size.ts';
import { WEBSOCKET_FUNCTIONS } from '../../infra/constructs/bundling.ts';
import { RELEASE } from '../../lib/release.ts';

/**
 * The WebSocket functions as deployed: each bundle (esbuild, the construct's settings, the
 * Lambda substitutions) imported by a fresh process with no node_modules in reach and invoked
 * against dynalite: the authorizer allows a join token (its signed GetItem), `$connect`
 * registers, health and `$disconnect` answer 200. A bundle that only imports is not enough:
 * a module substituted for Lambda (credentials, the authorizer's reader) runs at invocation.
 */
describe('function bundles, invoked', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bundle-invoke-test-'));
    for (const name of WEBSOCKET_FUNCTIONS) {
      await bundleFunction(name, { outdir: join(dir, name) });
    }
  }, 120_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('answers each function common event from its bundle', async () => {
    const results = await invokeBuiltBundles(dir, 2);
    expect(Object.keys(results).sort()).toEqual([...WEBSOCKET_FUNCTIONS].sort());
    expect(Object.entries(results).filter(([, result]) => !result.ok)).toEqual([]);
  }, 120_000);

  it("carries the release (describe's registrarVersion) without package.json", async () => {
    const code = await readFile(join(dir, 'message', 'index.mjs'), 'utf8');
    expect(code).toContain(JSON.stringify(RELEASE));
    // A script of the project's own package.json: the file whole is not there.
    expect(code).not.toContain('lock:complete');
  });
});
