/**
 * The integration and property files that reach the store, again, against DynamoDB Local (the
 * real DynamoDB engine in Java), for fidelity beyond dynalite (test/dynamodb-local-files.ts
 * says which). One DynamoDB Local serves the whole run; each test file still gets a fresh
 * table. `npm test -- --all` runs this beside the dynalite pass: it is skipped when Java is
 * missing, except in CI (CI=true), where a missing Java fails the run.
 */
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local-server.ts';
import { filesReachingDynamoDbLocal } from './dynamodb-local-files.ts';

const javaPresent = spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0;
if (!javaPresent) {
  if (process.env.CI === 'true') {
    console.error(
      'DynamoDB Local suite: java not found, and CI=true requires it (install Java 17)',
    );
    process.exit(1);
  }
  console.log('DynamoDB Local suite skipped: java not found (it runs in CI)');
  process.exit(0);
}

const server = await startDynamoDbLocal();
console.log(`DynamoDB Local suite: ${server.endpoint}`);
const asked = process.argv.slice(2);
const files =
  asked.length > 0
    ? asked
    : filesReachingDynamoDbLocal(join(dirname(fileURLToPath(import.meta.url)), '..'));
console.log(`DynamoDB Local suite: ${files.length} files reach the store`);
/**
 * vitest on `files`: first those that may share forks (test/shared-process.ts), then the rest,
 * each in a fork of its own, as npm test runs the dynalite pass.
 */
async function vitestOn(shared: 'only' | 'skip'): Promise<number> {
  const vitest = spawn(
    process.execPath,
    ['node_modules/vitest/vitest.mjs', 'run', '--passWithNoTests', ...files],
    {
      stdio: 'inherit',
      env: {
        ...process.env,
        REGISTRAR_TEST_SHARED: shared,
        REGISTRAR_TEST_BACKEND: 'dynamodb-local',
        REGISTRAR_TEST_DYNAMODB_ENDPOINT: server.endpoint,
        ...(process.env.REGISTRAR_TEST_RESULTS
          ? {
              REGISTRAR_TEST_RESULTS: process.env.REGISTRAR_TEST_RESULTS.replace(
                /\.json$/,
                '.dynamodb-local.json',
              ),
            }
          : {}),
      },
    },
  );
  return new Promise<number>((resolve) => vitest.once('exit', (c) => resolve(c ?? 1)));
}
const sharedCode = await vitestOn('only');
const code = sharedCode !== 0 ? sharedCode : await vitestOn('skip');
await server.close();
process.exit(code);
