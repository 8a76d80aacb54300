import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FUNCTION_ENTRIES, type FunctionName, REPO_ROOT } from '../infra/constructs/bundling.ts';
import { bundleFunction } from './bundle-size.ts';

/**
 * What a cold Lambda init waits for, as far as the bundle decides it. Every sample is a new
 * Node process (nothing shared with the bench: no module, no compile cache, no warmed JIT), run
 * with only Lambda's variables (and NODE_DISABLE_COMPILE_CACHE=1, so no code cache from an
 * earlier sample is read). The file itself is in the page cache (read once before the first
 * sample), as on a warm Lambda host. Each process reports two figures:
 * - `import`: from after its ESM loader is warmed (a one-line module imported first) to the
 *   bundle's module evaluated: the bundle's own parse, compile and top-level code;
 * - `init`: from the process's start (performance.timeOrigin) to the same point: Node's
 *   bootstrap, the loader and the bundle, what Lambda's INIT phase holds besides its own
 *   runtime client. An empty module's init, measured in the same round, is its floor.
 * Variants: `sdk-external` (`@aws-sdk/*` left out, resolved at import from node_modules next
 * to the bundle, as the nodejs22.x runtime resolves its own copy) and `sdk-bundled` (what the
 * stack deploys). RUNS rounds; each round runs the empty module, then each variant, so a busy
 * moment of a shared machine weighs on all alike; medians are reported.
 */
const RUNS = Number(process.env.BENCH_COLD_RUNS ?? 9);
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
  medianInitMs: number;
  /** The median init of a process importing an empty module, in the same rounds. */
  medianEmptyInitMs: number;
}

/** The script each sample runs: warm the loader, then time the import, and the init so far. */
const PROBE = `await import('data:text/javascript,export default 1');
const t = performance.now();
await import(process.argv[1]);
const end = performance.now();
process.stdout.write(JSON.stringify({ importMs: end - t, initMs: end }));`;

interface Sample {
  importMs: number;
  initMs: number;
}

function sample(url: string): Sample {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', PROBE, url], {
    // What Lambda sets; the handler files read nothing else at import.
    env: {
      PATH: process.env.PATH,
      AWS_REGION: 'eu-west-1',
      NODE_OPTIONS: '',
      NODE_DISABLE_COMPILE_CACHE: '1',
    },
    encoding: 'utf8',
  });
  return JSON.parse(out) as Sample;
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
    const empty = join(dir, 'empty.mjs');
    await writeFile(empty, 'export const handler = async () => ({});\n');
    for (const name of names) {
      const files: { variant: Variant; file: string; bytes: number }[] = [];
      for (const [variant, externalModules] of Object.entries(VARIANTS) as [
        Variant,
        readonly string[],
      ][]) {
        const outdir = join(dir, `${name}-${variant}`);
        await bundleFunction(name, { externalModules, outdir });
        const file = join(outdir, 'index.mjs');
        await readFile(file); // into the page cache, as a warm host has the code on local disk
        files.push({ variant, file, bytes: (await stat(file)).size });
      }
      const samples = new Map<string, Sample[]>();
      const take = (key: string, file: string) =>
        samples.set(key, [...(samples.get(key) ?? []), sample(pathToFileURL(file).href)]);
      for (let round = 0; round < RUNS; round++) {
        take('empty', empty);
        for (const { variant, file } of files) take(variant, file);
      }
      const floor = median((samples.get('empty') ?? []).map((s) => s.initMs));
      for (const { variant, bytes } of files) {
        const mine = samples.get(variant) ?? [];
        results.push({
          name,
          variant,
          bundleBytes: bytes,
          medianImportMs: median(mine.map((s) => s.importMs)),
          medianInitMs: median(mine.map((s) => s.initMs)),
          medianEmptyInitMs: floor,
        });
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
  console.log(
    `| function | variant | bundle KB | import ms | init ms (empty module: floor) | medians of ${RUNS} fresh processes |`,
  );
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const r of results) {
    console.log(
      `| ${r.name} | ${r.variant} | ${(r.bundleBytes / 1024).toFixed(1)} | ${r.medianImportMs.toFixed(1)} | ${r.medianInitMs.toFixed(1)} (${r.medianEmptyInitMs.toFixed(1)}) | |`,
    );
  }
}
