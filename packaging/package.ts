/**
 * `npm run package [-- --out DIR]`: builds every artifact (packaging/build-artifacts.ts) of
 * this checkout as it is (its node_modules, uncommitted changes included) into dist/packages/
 * (or DIR). `npm run release` builds a commit alone, with checksums (scripts/release.ts).
 */

import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { sourceDateEpoch } from './agent-stage.ts';
import { artifactNames, buildArtifacts } from './build-artifacts.ts';

const { values } = parseArgs({ options: { out: { type: 'string', default: 'dist/packages' } } });
const root = resolve(import.meta.dirname, '..');
const outDir = resolve(values.out ?? 'dist/packages');
const started = performance.now();
const artifacts = await buildArtifacts({ root, outDir, epochSeconds: sourceDateEpoch() });
process.stdout.write(
  `built into ${outDir} in ${((performance.now() - started) / 1000).toFixed(1)} s:\n${artifactNames(
    artifacts,
  )
    .map((name) => `  ${name}\n`)
    .join('')}`,
);
