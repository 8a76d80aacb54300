import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FUNCTION_ENTRIES, type FunctionName, REPO_ROOT } from '../infra/constructs/bundling.ts';
import { bundleFunction } from './bundle-size.ts';

/**
 * A cold-start proxy: the time a fresh Node process takes to import a function's bundle, the
 * part of a Lambda cold start the bundle decides (the runtime's own start and the first
 * request are the same either way). Two variants:
 * - `sdk-external`: `@aws-sdk/*` left out, resolved at import from node_modules next to the
 *   bundle, as the nodejs22.x runtime resolves it from its own copy;
 * - `sdk-bundled`: everything in the one minified file (what the stack deploys).
 * Each is imported RUNS times, each in a new process; the median is reported.
 */
const RUNS = 9;
export const VARIANTS = {
  'sdk-external': ['@aws-sdk/*'],
  'sdk-bundled': [],
} as const satisfies Record<string, readonly string[]>;
export type Variant = keyof typeof VARIANTS;

export interface ColdStart {
  name: FunctionName | 'project';
  variant: Variant;
  bundleBytes: number;
  medianImportMs: number;
}

function importMs(file: string): number {
  const script = `const t=performance.now();await import(${JSON.stringify(`file://${file}`)});process.stdout.write(String(performance.now()-t));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    // What Lambda sets; the handler files read nothing else at import.
    env: { PATH: process.env.PATH, AWS_REGION: 'eu-west-1', NODE_OPTIONS: '' },
    encoding: 'utf8',
  });
  return Number(out);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

export async function measureColdStarts(
  names: (FunctionName | 'project')[] = [
    ...(Object.keys(FUNCTION_ENTRIES) as FunctionName[]),
    'project',
  ],
): Promise<ColdStart[]> {
  const results: ColdStart[] = [];
  const dir = await mkdtemp(join(tmpdir(), 'cold-start-'));
  try {
    // The external SDK resolves from here, as from the runtime's /var/runtime/node_modules.
    await symlink(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
    for (const name of names) {
      for (const [variant, externalModules] of Object.entries(VARIANTS) as [
        Variant,
        readonly string[],
      ][]) {
        const outdir = join(dir, `${name}-${variant}`);
        await bundleFunction(name, { externalModules, outdir });
        const file = join(outdir, 'index.mjs');
        const bundleBytes = (await stat(file)).size;
        importMs(file); // warm the file cache: Lambda reads the code from local disk too
        const times = Array.from({ length: RUNS }, () => importMs(file));
        results.push({ name, variant, bundleBytes, medianImportMs: median(times) });
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}

// `node bench/cold-start.ts`: the table for docs/benchmarks.md.
if (import.meta.url === `file://${process.argv[1]}`) {
  const results = await measureColdStarts();
  console.log('| function | SDK external: bundle, import | SDK bundled: bundle, import |');
  console.log('| --- | --- | --- |');
  for (const name of new Set(results.map((r) => r.name))) {
    const cell = (variant: Variant) => {
      const r = results.find((x) => x.name === name && x.variant === variant);
      return r ? `${(r.bundleBytes / 1024).toFixed(1)} KB, ${r.medianImportMs.toFixed(1)} ms` : '-';
    };
    console.log(`| ${name} | ${cell('sdk-external')} | ${cell('sdk-bundled')} |`);
  }
}
