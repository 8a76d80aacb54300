import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FUNCTION_ENTRIES, type FunctionName } from '../infra/constructs/bundling.ts';
import { bundleFunction } from './bundle-size.ts';

/**
 * What a container pays on its first error, per function, with the deployed bundle and map:
 * a fresh Node process imports the bundle (the cold-start part the bundle decides), invokes the
 * handler with no configuration (it rejects from inside the bundle, as a refused token or a
 * fault does), and reads the error's stack, as Lambda's runtime does to log it. Then a second
 * error, to show what is paid once. Run with and without `--enable-source-maps`: with it, the
 * first stack trace parses the function's source map.
 */
const RUNS = 5;

export const NODE_OPTIONS_VARIANTS = {
  'no source maps (deployed)': '',
  '--enable-source-maps': '--enable-source-maps',
} as const;
export type NodeOptionsVariant = keyof typeof NODE_OPTIONS_VARIANTS;

export interface FirstError {
  name: FunctionName;
  variant: NodeOptionsVariant;
  bundleBytes: number;
  mapBytes: number;
  importMs: number;
  firstErrorMs: number;
  secondErrorMs: number;
}

// The probe prints one JSON line last; the handler's own log lines come before it.
const PROBE = `
const file = process.argv[1];
const context = { functionName: 'bench', awsRequestId: 'bench', getRemainingTimeInMillis: () => 10000 };
const failOnce = async (handler) => {
  const t = performance.now();
  try { await handler({}, context); } catch (error) { if (String(error.stack).length === 0) throw error; }
  return performance.now() - t;
};
const t0 = performance.now();
const { handler } = await import(file);
const importMs = performance.now() - t0;
const firstErrorMs = await failOnce(handler);
const secondErrorMs = await failOnce(handler);
process.stdout.write('\\n' + JSON.stringify({ importMs, firstErrorMs, secondErrorMs }));
`;

function probe(
  file: string,
  nodeOptions: string,
): Pick<FirstError, 'importMs' | 'firstErrorMs' | 'secondErrorMs'> {
  const out = execFileSync(
    process.execPath,
    ['--input-type=module', '-e', PROBE, `file://${file}`],
    {
      // No table and no region: the configuration is refused inside the handler, a real error.
      env: { PATH: process.env.PATH, NODE_OPTIONS: nodeOptions, POWERTOOLS_LOG_LEVEL: 'SILENT' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  const last = out.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

export async function measureFirstErrors(
  names: FunctionName[] = Object.keys(FUNCTION_ENTRIES) as FunctionName[],
): Promise<FirstError[]> {
  const results: FirstError[] = [];
  const dir = await mkdtemp(join(tmpdir(), 'first-error-'));
  try {
    for (const name of names) {
      const outdir = join(dir, name);
      await bundleFunction(name, { outdir });
      const file = join(outdir, 'index.mjs');
      const bundleBytes = (await stat(file)).size;
      const mapBytes = (await stat(`${file}.map`)).size;
      probe(file, ''); // warm the file cache: Lambda reads the code from local disk too
      for (const [variant, nodeOptions] of Object.entries(NODE_OPTIONS_VARIANTS) as [
        NodeOptionsVariant,
        string,
      ][]) {
        const runs = Array.from({ length: RUNS }, () => probe(file, nodeOptions));
        results.push({
          name,
          variant,
          bundleBytes,
          mapBytes,
          importMs: median(runs.map((r) => r.importMs)),
          firstErrorMs: median(runs.map((r) => r.firstErrorMs)),
          secondErrorMs: median(runs.map((r) => r.secondErrorMs)),
        });
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}
