import type { Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleFunction } from '../../bench/bundle-size.ts';
import { type FunctionName, WEBSOCKET_FUNCTIONS } from '../../infra/constructs/bundling.ts';

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

  it.each(WEBSOCKET_FUNCTIONS)('%s leaves the AWS SDK to the Lambda runtime', (name) => {
    expect(inputs(name).filter((path) => path.includes('node_modules/@aws-sdk/'))).toEqual([]);
  });

  it.each(WEBSOCKET_FUNCTIONS)('%s is one ES module with its source map', (name) => {
    const outputs = Object.keys(metafiles.get(name)?.outputs ?? {});
    expect(outputs.map((path) => path.replace(/.*\//, '')).sort()).toEqual([
      'index.mjs',
      'index.mjs.map',
    ]);
  });
});
