import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleFunction } from '../../bench/bundle-size.ts';
import { type FunctionName, WEBSOCKET_FUNCTIONS } from '../../infra/constructs/bundling.ts';
import { decodeStack } from '../../scripts/decode-stack.ts';
import { runProgram } from '../fixtures/run-program.ts';

/**
 * Real esbuild bundles, with the settings the CDK construct deploys (the assertion tests skip
 * bundling; this file and `cdk synth` in .ci/run prove it works). Sizes are measured by
 * `npm run bench`, not asserted here.
 */
describe('function bundles', () => {
  const metafiles = new Map<FunctionName, Metafile>();
  beforeAll(async () => {
    for (const name of WEBSOCKET_FUNCTIONS) metafiles.set(name, await bundleFunction(name));
  }, 120_000);

  function inputs(name: FunctionName): string[] {
    return Object.keys(metafiles.get(name)?.inputs ?? {});
  }

  it.each(WEBSOCKET_FUNCTIONS)('%s bundles nothing from @kubernetes/client-node', (name) => {
    expect(inputs(name).filter((path) => path.includes('@kubernetes/'))).toEqual([]);
  });

  it.each(WEBSOCKET_FUNCTIONS)('%s bundles the AWS SDK it was tested with', (name) => {
    // The authorizer has no SDK client, only the SDK's signer (lib/store/dynamodb-http-reader.ts).
    const sdk =
      name === 'authorize'
        ? 'node_modules/@smithy/signature-v4/'
        : 'node_modules/@aws-sdk/client-dynamodb/';
    expect(inputs(name)).toContainEqual(expect.stringContaining(sdk));
    if (name === 'authorize') {
      expect(inputs(name).filter((path) => path.includes('/@aws-sdk/client-dynamodb/'))).toEqual(
        [],
      );
    }
    const imports = Object.values(metafiles.get(name)?.outputs ?? {}).flatMap((o) => o.imports);
    const external = imports.filter((i) => i.external).map((i) => i.path);
    // Only Node's own modules are left to the runtime.
    expect(external.filter((path) => !path.startsWith('node:') && !/^[a-z_]+$/.test(path))).toEqual(
      [],
    );
  });

  it.each(WEBSOCKET_FUNCTIONS)('%s is one ES module with its source map', (name) => {
    const outputs = Object.keys(metafiles.get(name)?.outputs ?? {});
    expect(outputs.map((path) => path.replace(/.*\//, '')).sort()).toEqual([
      'index.mjs',
      'index.mjs.map',
    ]);
  });

  describe('loaded as the runtime loads them, with no node_modules in reach', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'bundle-load-'));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it.each([...WEBSOCKET_FUNCTIONS, 'sweeper', 'project'] as const)(
      '%s imports and exports a handler',
      async (name) => {
        const outdir = join(dir, name);
        await bundleFunction(name, { outdir });
        const script = `const m=await import(${JSON.stringify(`file://${join(outdir, 'index.mjs')}`)});process.stdout.write(typeof m.handler);`;
        const run = await runProgram(
          process.execPath,
          ['--input-type=module', '-e', script],
          { PATH: process.env.PATH, AWS_REGION: 'eu-west-1' },
          outdir,
        );
        expect(run.code, run.stderr).toBe(0);
        expect(run.stdout).toBe('function');
      },
      60_000,
    );

    it('a logged stack trace maps back to the TypeScript sources with the shipped map', async () => {
      // The functions run without --enable-source-maps: the stack points into index.mjs, and
      // scripts/decode-stack.ts maps it with index.mjs.map.
      const outdir = join(dir, 'decode');
      await bundleFunction('authorize', { outdir });
      const file = join(outdir, 'index.mjs');
      const script = `const m=await import(${JSON.stringify(`file://${file}`)});try{await m.handler({},{getRemainingTimeInMillis:()=>1000})}catch(e){process.stdout.write(e.stack)}`;
      const { stdout: stack } = await runProgram(
        process.execPath,
        ['--input-type=module', '-e', script],
        { PATH: process.env.PATH, POWERTOOLS_LOG_LEVEL: 'SILENT', NODE_OPTIONS: '' },
        outdir,
      );
      expect(stack).toMatch(/REGISTRAR_TABLE/);
      expect(stack).toMatch(/index\.mjs:\d+:\d+/);
      expect(stack).not.toMatch(/lib\/config\.ts/);
      const payload = JSON.parse(await readFile(`${file}.map`, 'utf8'));
      expect(payload.sourcesContent).toBeUndefined();
      expect(decodeStack(stack, payload)).toMatch(
        /index\.mjs:\d+:\d+ \[-> lib\/config\.ts:\d+:\d+\]/,
      );
    }, 60_000);
  });
});
