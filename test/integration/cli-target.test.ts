import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * Which local runtime the CLI talks to without flags: the nearest `.registrar/` in the
 * current directory or a parent (as git finds `.git`), or `$REGISTRAR_DATA_DIR`. runCli
 * in-process against a real table (dynalite) that the `local.json` files point at.
 */

let dynamo: TestDynamo;
let root: string;

function registrar(args: string[], cwd: string, env: Record<string, string> = {}) {
  return captureCli(args, { env, cwd });
}

/** A data dir as the local runtime leaves it while it runs; `endpoint` overrides dynalite's. */
async function dataDir(path: string, endpoint?: string): Promise<void> {
  await mkdir(path, { recursive: true });
  const local = {
    url: 'ws://127.0.0.1:1/local',
    dynamoDbEndpoint: endpoint ?? dynamo.endpoint,
    tableName: dynamo.tableName,
    region: 'us-east-1',
  };
  await writeFile(join(path, 'local.json'), JSON.stringify(local));
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  root = await mkdtemp(join(tmpdir(), 'registrar-target-'));
  const group = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec: {template: {ports: {http: 8080}}}
`;
  const applied = await runCli(['apply', '-f', '-'], {
    stdout: { write: () => true },
    stderr: { write: () => true },
    stdin: Readable.from([group]),
    env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName },
    cwd: root,
  });
  expect(applied).toBe(0);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  await dynamo?.close();
});

describe('finding the local runtime', () => {
  it('finds .registrar/ in a parent directory, from any depth', async () => {
    const checkout = join(root, 'checkout');
    await dataDir(join(checkout, '.registrar'));
    const deep = join(checkout, 'deploy', 'vms', 'eu');
    await mkdir(deep, { recursive: true });

    const run = await registrar(['get', 'wg', '-n', 'shop', '-o', 'name'], deep);

    expect(run).toEqual({ code: 0, stdout: 'workloadgroup.networking.istio.io/web\n', stderr: '' });
  });

  it('uses the nearest .registrar/ and names it when its runtime is not running', async () => {
    const checkout = join(root, 'nested');
    await dataDir(join(checkout, '.registrar'));
    // A sub-project with a data dir of its own, whose runtime has stopped (no local.json).
    await mkdir(join(checkout, 'sub', '.registrar'), { recursive: true });
    await mkdir(join(checkout, 'sub', 'src'));

    const run = await registrar(['get', 'wg'], join(checkout, 'sub', 'src'));

    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `error: no local runtime is running: ${join(checkout, 'sub', '.registrar', 'local.json')} does not exist ('npm start' writes it while it runs); start the local runtime, or pass --table <name> (and --endpoint <url> for a local DynamoDB)\n`,
    );
  });

  it('names the local.json it read when its endpoint does not answer', async () => {
    const checkout = join(root, 'stopped');
    // Port 9 (discard) refuses connections: a runtime that stopped without removing its file.
    await dataDir(join(checkout, '.registrar'), 'http://127.0.0.1:9');
    await mkdir(join(checkout, 'src'));

    const run = await registrar(['get', 'wg'], join(checkout, 'src'));

    expect(run).toMatchObject({
      code: 1,
      stderr: `error: cannot reach DynamoDB at http://127.0.0.1:9 (from ${join(checkout, '.registrar', 'local.json')}); is 'npm start' still running?\n`,
    });
  });

  it('reads <REGISTRAR_DATA_DIR>/local.json, relative to the current directory, before any .registrar/', async () => {
    const checkout = join(root, 'with-env');
    await dataDir(join(checkout, 'state'));
    // A .registrar/ of a stopped runtime right here: the variable wins over it.
    await mkdir(join(checkout, '.registrar'), { recursive: true });

    const run = await registrar(['get', 'wg', '-n', 'shop', '-o', 'name'], checkout, {
      REGISTRAR_DATA_DIR: 'state',
    });

    expect(run).toEqual({ code: 0, stdout: 'workloadgroup.networking.istio.io/web\n', stderr: '' });
    const missing = await registrar(['get', 'wg'], checkout, { REGISTRAR_DATA_DIR: 'elsewhere' });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      `no local runtime is running: elsewhere/local.json does not exist`,
    );
  });

  it('prefers --table over any local runtime', async () => {
    const checkout = join(root, 'explicit');
    await dataDir(join(checkout, '.registrar'), 'http://127.0.0.1:9');
    const run = await registrar(
      [
        '--table',
        dynamo.tableName,
        '--endpoint',
        dynamo.endpoint,
        'get',
        'wg',
        '-n',
        'shop',
        '-o',
        'name',
      ],
      checkout,
    );
    expect(run.code).toBe(0);
  });
});
