import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { build, type Plugin } from 'esbuild';

/**
 * The CLI's bundle for the npm package: bin/registrar.js and everything it loads, dependencies
 * included, as ESM split at each dynamic import. `registrar --version` and `--help` load only
 * the small entry chunk (the command tree and the AWS SDK are chunks loaded on use), and an
 * installed package needs no node_modules and no type stripping.
 *
 * Every file lands in one folder, `<package>/cli/`: the sources find package.json at
 * `../package.json` from their own URL (cli/version.ts, bin/registrar.js) and the dashboard's
 * built page at `../dist/` (dashboard/server/assets.ts), so the package keeps that shape.
 */
export async function bundleCli(root: string, outdir: string): Promise<void> {
  await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'bin/registrar.js')],
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    outdir,
    entryNames: '[name]',
    chunkNames: '[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    // Names kept: a stack trace from an installed CLI still names the functions.
    minifyWhitespace: true,
    minifySyntax: true,
    // CommonJS dependencies inside an ESM bundle need a `require`; the banner provides one.
    banner: {
      js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
    },
    plugins: [bundledLazyRequires],
    logLevel: 'warning',
  });
}

const LOCAL_REQUIRE = 'const require = createRequire(import.meta.url);';

/**
 * A few CLI modules load a dependency on first use with a `require` of their own
 * (cli/output.ts: yaml; cli/go-template-option.ts: the template engine), which keeps `get` fast
 * from a checkout. In a bundle that `require` would look for `./go-template/template.ts` next
 * to the chunk. Without the local declaration the call is esbuild's own `require`, which runs
 * the bundled module on first use: the same laziness, inside the bundle.
 */
const bundledLazyRequires: Plugin = {
  name: 'bundled-lazy-requires',
  setup(context) {
    context.onLoad({ filter: /\/(cli|lib|dashboard)\/.*\.ts$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      if (!text.includes(LOCAL_REQUIRE)) return undefined;
      return { contents: text.replace(LOCAL_REQUIRE, ''), loader: 'ts' };
    });
  },
};
