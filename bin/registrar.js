#!/usr/bin/env node
// The operator CLI. Node strips the TypeScript types itself, so there is no build step.
// The Node.js version is checked first, before any TypeScript loads.
import { exitUnlessSupportedNode } from '../scripts/node-version.js';

exitUnlessSupportedNode({ program: 'registrar' });

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
