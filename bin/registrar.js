#!/usr/bin/env node
// The operator CLI. Node strips the TypeScript types itself, so a checkout has no build step.
// The Node.js version is checked first, before any TypeScript loads. The npm package runs this
// file bundled (packaging/cli-bundle.ts: <package>/cli/registrar.mjs), already JavaScript, which
// needs only Node 22.
import { exitUnlessSupportedNode } from '../scripts/node-version.js';

exitUnlessSupportedNode({
  program: 'registrar',
  bundled: !import.meta.url.endsWith('/bin/registrar.js'),
});

// The CLI runs functions' code in-process (ec2-event): their EMF metric lines are for
// CloudWatch, not for the operator's terminal. Read by Powertools when it loads.
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

// `--version` alone needs none of the CLI: answer it before loading any of it (the command
// tree and its stores take a few hundred milliseconds to load). Same text as cli/version.ts.
if (process.argv.length === 3 && process.argv[2] === '--version') {
  const { readFileSync } = await import('node:fs');
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`registrar ${typeof version === 'string' ? version : 'unknown'}\n`);
  process.exit(0);
}

// Node keeps each module's compiled code in a cache on disk (<tmpdir>/node-compile-cache, or
// NODE_COMPILE_CACHE; a changed file is compiled again): without it every run compiles the CLI
// and the AWS SDK anew, ~40 ms of `registrar get`'s CPU (issue 17; Node 22 still strips the
// TypeScript types each run). NODE_DISABLE_COMPILE_CACHE=1 turns it off.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
// From a checkout, each module's stripped types are kept beside the compiled code
// (scripts/ts-cache.js): 0.43 s of a start's CPU becomes 0.15 s. Not a literal, so the npm
// package's bundle (already JavaScript) does not carry it.
if (import.meta.url.endsWith('/bin/registrar.js')) {
  await import(new URL('../scripts/ts-cache.js', import.meta.url).href);
}

async function loadCli() {
  try {
    return await import('../cli/main.ts');
  } catch (error) {
    // No Node strips types inside node_modules (the version was checked above): say so
    // instead of printing a loader stack trace.
    const code = error?.code;
    if (
      code !== 'ERR_UNKNOWN_FILE_EXTENSION' &&
      code !== 'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING'
    ) {
      throw error;
    }
    process.stderr.write(
      `error: registrar runs its TypeScript sources directly: it needs a checkout of the ` +
        `project, not an installed package; this is Node ${process.version} (${code})\n`,
    );
    process.exit(1);
  }
}

const { runCli } = await loadCli();
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
});
