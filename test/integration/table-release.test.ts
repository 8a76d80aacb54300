import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { RELEASE } from '../../lib/release.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { SCHEMA_KEY } from '../../lib/store/dynamodb-schema-store.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { testBackend } from '../fixtures/dynamo.ts';
import {
  type RuntimeProcess,
  spawnRuntime,
  startRuntimeProcess,
} from '../fixtures/local-runtime-process.ts';

/**
 * `npm start` as a process on a data dir: it records its release in the table, its sweeper
 * runs the migrations, `registrar migrate` shows them; and a table written by a release it
 * cannot read stops it before it starts, naming both releases (what a rollback past a
 * migration that broke older readers looks like).
 */
const dataDir = mkdtempSync(join(tmpdir(), 'registrar-table-release-'));
const running: RuntimeProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((runtime) => runtime.stop()));
  rmSync(dataDir, { recursive: true, force: true });
});

const cli = (args: string[]) => captureCli(args, { env: { REGISTRAR_DATA_DIR: dataDir } });

// The runtime's own dynalite keeps the data dir: there is no DynamoDB Local variant of this.
describe.skipIf(testBackend() === 'dynamodb-local')('the release that runs on a table', () => {
  it('is recorded at start, and the sweeper completes the migrations', async () => {
    const runtime = await startRuntimeProcess(['--data-dir', dataDir, '--sweep-interval', '1s']);
    running.push(runtime);
    const status = async () => JSON.parse((await cli(['migrate', 'status', '-o', 'json'])).stdout);
    await waitFor(async () => (await status()).record?.schema === 2, 'the migrations done', 20_000);
    const shown = await status();
    expect(shown).toMatchObject({
      release: RELEASE,
      codeSchema: 2,
      record: { writtenBy: RELEASE, lastRunBy: RELEASE, readableFrom: 1 },
      migrations: [{ id: 2, name: 'zone-counters-per-namespace', state: 'done' }],
    });
    const text = await cli(['migrate', 'status']);
    expect(text.stdout).toMatch(/^schema:\s+2 \(registrar \S+ knows up to 2\)$/m);
    expect(text.stdout).toMatch(/^2\s+zone-counters-per-namespace\s+done\s/m);
    expect(await cli(['migrate', 'run'])).toEqual({
      code: 0,
      stdout: 'nothing to migrate; the table is at schema 2\n',
      stderr: '',
    });
    expect(await runtime.stop()).toBe(0);
  });

  it('refuses to start on a table written by a release that cannot be read, naming both', async () => {
    // Start once more to reach the table, and record a release of the future in it.
    const runtime = await startRuntimeProcess(['--data-dir', dataDir]);
    running.push(runtime);
    const { dynamoDbEndpoint } = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8'));
    const client = createDocumentClient({ region: 'us-east-1', endpoint: dynamoDbEndpoint });
    await client.send(
      new PutCommand({
        TableName: 'workload-registrar',
        Item: {
          ...SCHEMA_KEY,
          schema: 9,
          readableFrom: 9,
          writtenBy: '9.0.0',
          lastRunBy: '9.0.0',
          lastRunAt: Date.now(),
          history: [],
          revision: 7,
        },
      }),
    );
    client.destroy();
    expect(await runtime.stop()).toBe(0);

    const refused = spawnRuntime(['--data-dir', dataDir]);
    expect(await refused.exited).toBe(1);
    expect(refused.stderr().trim()).toBe(
      `registrar: failed to start: this table was written by registrar 9.0.0 (schema 9), which code older than schema 9 cannot read; this is registrar ${RELEASE} (schema 2): run 9.0.0 or newer, or restore the table from a backup taken before the upgrade (docs/deploy.md, rolling back)`,
    );
    expect(refused.stdout()).not.toContain('is running locally');
    // Nothing left behind: the data dir is free for the release that can read it.
    expect(existsSync(join(dataDir, 'runtime.lock'))).toBe(false);
  });
});
