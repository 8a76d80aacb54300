/**
 * The integration suite again, against DynamoDB Local (the real DynamoDB engine in Java),
 * for fidelity beyond dynalite. One DynamoDB Local serves the whole run; each test file still
 * gets a fresh table. `npm test` runs this after the main suite: it is skipped when Java is
 * missing, except in CI (CI=true), where a missing Java fails the run.
 */
import { spawn, spawnSync } from 'node:child_process';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local-server.ts';

/** The suites that talk to DynamoDB through test/fixtures/dynamo.ts or the local runtime. */
const DYNAMODB_SUITES = ['test/integration', 'test/property'];

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
const files = process.argv.slice(2);
const vitest = spawn(
  process.execPath,
  ['node_modules/vitest/vitest.mjs', 'run', ...(files.length > 0 ? files : DYNAMODB_SUITES)],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
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
const code = await new Promise<number>((resolve) => vitest.once('exit', (c) => resolve(c ?? 1)));
await server.close();
process.exit(code);
