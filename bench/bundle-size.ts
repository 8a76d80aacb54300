import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import {
  BUNDLE,
  bundleDefine,
  FUNCTION_ALIASES,
  FUNCTION_ENTRIES,
  type FunctionName,
  REPO_ROOT,
} from '../infra/constructs/bundling.ts';

/**
 * Bundles every Lambda function with the settings the CDK construct uses (minified ESM for
 * node22, the AWS SDK bundled) and reports the size of the code Lambda loads, from esbuild's
 * metafile. The source map is built too (it is deployed) but not counted: it is only read
 * when a stack trace is printed.
 */
export interface BundleSize {
  name: FunctionName;
  bytes: number;
  /** Input bytes by package (node_modules/<pkg>) or `(project)`, largest first. */
  inputs: { source: string; bytes: number }[];
}

export interface BundleOptions {
  /** Modules left out of the bundle; default the deployed setting (BUNDLE.externalModules). */
  externalModules?: readonly string[];
  /** Write the bundle here (index.mjs) instead of only measuring it. */
  outdir?: string;
  /**
   * The Regions whose certificates the bundle carries; default CONNECT_CERTIFICATE_REGIONS for
   * `connect` (IAM mode's default: the stack's own Region), none for the others.
   */
  certificateRegions?: readonly string[];
}

/** `$connect` in IAM mode trusts its stack's Region by default: one certificate. */
export const CONNECT_CERTIFICATE_REGIONS: readonly string[] = ['us-east-1'];

/**
 * Functions whose constructs name their entry themselves (infra/constructs/projector.ts,
 * mesh-identity.ts): bundled with the same settings, without FUNCTION_ALIASES, as deployed.
 */
const OTHER_ENTRIES = {
  project: 'functions/project.ts',
  meshIdentity: 'functions/mesh-identity.ts',
} as const;

export type BundledFunction = FunctionName | keyof typeof OTHER_ENTRIES;

export async function bundleFunction(
  name: BundledFunction,
  options: BundleOptions = {},
): Promise<Metafile> {
  const other = name === 'project' || name === 'meshIdentity';
  const entry = other ? OTHER_ENTRIES[name] : FUNCTION_ENTRIES[name];
  const result = await build({
    entryPoints: [join(REPO_ROOT, entry)],
    bundle: true,
    write: options.outdir !== undefined,
    outfile: join(options.outdir ?? join(REPO_ROOT, 'cdk.out', 'bundle-size', name), 'index.mjs'),
    platform: 'node',
    format: 'esm',
    target: BUNDLE.target,
    minify: BUNDLE.minify,
    sourcemap: BUNDLE.sourceMap,
    sourcesContent: BUNDLE.sourcesContent,
    external: [...(options.externalModules ?? BUNDLE.externalModules)],
    mainFields: [...BUNDLE.mainFields],
    banner: { js: BUNDLE.banner },
    define: bundleDefine(
      options.certificateRegions ?? (name === 'connect' ? CONNECT_CERTIFICATE_REGIONS : []),
    ),
    ...(other ? {} : { alias: { ...FUNCTION_ALIASES } }),
    metafile: true,
    logLevel: 'silent',
  });
  return result.metafile;
}

/** The size of each function's bundle, as deployed (or with other externals). */
export async function measureBundleSizes(options: BundleOptions = {}): Promise<BundleSize[]> {
  const sizes: BundleSize[] = [];
  for (const name of Object.keys(FUNCTION_ENTRIES) as FunctionName[]) {
    const metafile = await bundleFunction(name, options);
    const [, output] =
      Object.entries(metafile.outputs).find(([path]) => path.endsWith('.mjs')) ?? [];
    if (!output) throw new Error(`esbuild produced no .mjs output for ${name}`);
    sizes.push({ name, bytes: output.bytes, inputs: inputsByPackage(output.inputs) });
  }
  return sizes;
}

/** Groups a bundle's inputs by npm package, so a size regression names its cause. */
export function inputsByPackage(
  inputs: Record<string, { bytesInOutput: number }>,
): { source: string; bytes: number }[] {
  const totals = new Map<string, number>();
  for (const [path, { bytesInOutput }] of Object.entries(inputs)) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
    const source = match?.[1] ?? '(project)';
    totals.set(source, (totals.get(source) ?? 0) + bytesInOutput);
  }
  return [...totals]
    .map(([source, bytes]) => ({ source, bytes }))
    .sort((a, b) => b.bytes - a.bytes);
}

function kb(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KB`;
}

// `node bench/bundle-size.ts`: print the table for docs/benchmarks.md.
if (import.meta.url === `file://${process.argv[1]}`) {
  const sizes = await measureBundleSizes();
  console.log('| function | bundle (minified) | largest inputs |');
  console.log('| --- | --- | --- |');
  for (const size of sizes) {
    const top = size.inputs
      .slice(0, 4)
      .map((input) => `${input.source} ${kb(input.bytes)}`)
      .join(', ');
    console.log(`| ${size.name} | ${kb(size.bytes)} | ${top} |`);
  }
}
