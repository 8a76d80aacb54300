#!/usr/bin/env node
// The operator CLI. Node strips the TypeScript types itself, so there is no build step.

async function loadCli() {
  try {
    return await import('../cli/main.ts');
  } catch (error) {
    // Node before 22.18 does not strip types by default, and no Node strips them inside
    // node_modules: say so instead of printing a loader stack trace.
    const code = error?.code;
    if (
      code !== 'ERR_UNKNOWN_FILE_EXTENSION' &&
      code !== 'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING'
    ) {
      throw error;
    }
    process.stderr.write(
      `error: registrar runs its TypeScript sources directly: it needs Node 22.18 or newer ` +
        `(or NODE_OPTIONS=--experimental-strip-types) and a checkout of the project, not an ` +
        `installed package; this is Node ${process.version} (${code})\n`,
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
