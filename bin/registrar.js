#!/usr/bin/env node
// The operator CLI. Node 22 strips the TypeScript types itself, so there is no build step.
import { runCli } from '../cli/main.ts';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
});
