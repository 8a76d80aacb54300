import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * The operator's view, told as a story over a real table (dynalite): runCli in-process with
 * the environment pointing at a fresh table, and a fixed clock so ages and expiry are exact.
 */

const NOW = Date.parse('2026-03-01T12:00:00Z');
const MINUTE = 60_000;

const GROUP_AND_ENTRY = `apiVersion: networking.istio.io/v1beta1
kind: WorkloadGroup
metadata:
  name: web
  namespace: shop
spec:
  metadata:
    labels: {app: web}
  template:
    ports: {http: 8080}
    serviceAccount: web
  probe:
    httpGet: {path: /ready, port: 8080}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: db-1
  namespace: shop
spec:
  address: 10.0.0.5
  labels: {app: db}
`;

let dynamo: TestDynamo;
let store: RegistrarStore;
let clock = NOW;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function registrar(
  args: string[],
  options: { stdin?: string; cwd?: string; env?: Record<string, string> } = {},
): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: Readable.from([options.stdin ?? '']),
    env: options.env ?? {
      REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
      REGISTRAR_TABLE: dynamo.tableName,
    },
    cwd: options.cwd ?? tmpdir(),
    now: () => clock,
  });
  return { code, stdout, stderr };
}

/** An entry the way a VM's connect leaves it, written through the registry's own store. */
async function registerVm(name: string, connectedAt: number, connectionId: string): Promise<void> {
  const outcome = await store.connect({
    entry: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name, namespace: 'shop', creationTimestamp: new Date(connectedAt).toISOString() },
      spec: {
        address: '10.0.0.7',
        ports: { http: 8080 },
        serviceAccount: 'web',
        labels: { app: 'web' },
      },
    },
    autoRegistrationGroup: 'web',
    origin: 'test-origin',
    mayCreate: true,
    recordConnection: false,
    healthChecksEnabled: true,
    groupGeneration: 1,
    connectionId,
    connectedAt,
    controller: 'workload-registrar',
    identity: { principal: 'token:abc123', namespace: 'shop', serviceAccount: 'web' },
  });
  expect(outcome).toBe('created');
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
});

afterAll(async () => {
  await dynamo?.close();
});

beforeEach(() => {
  clock = NOW;
});

describe('registrar apply, get, describe, delete', () => {
  it('applies a multi-document file and reports each object like kubectl', async () => {
    const first = await registrar(['apply', '-f', '-'], { stdin: GROUP_AND_ENTRY });
    expect(first).toEqual({
      code: 0,
      stdout:
        'workloadgroup.networking.istio.io/web created\nworkloadentry.networking.istio.io/db-1 created\n',
      stderr: '',
    });

    const again = await registrar(['apply', '-f', '-'], { stdin: GROUP_AND_ENTRY });
    expect(again.stdout).toBe(
      'workloadgroup.networking.istio.io/web unchanged\nworkloadentry.networking.istio.io/db-1 unchanged\n',
    );
  });

  it('reads documents from a file relative to the working directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'registrar-cli-'));
    await writeFile(
      join(dir, 'api.yaml'),
      GROUP_AND_ENTRY.replaceAll('web', 'api').replaceAll('db-1', 'db-2'),
    );
    const run = await registrar(['apply', '-f', 'api.yaml'], { cwd: dir });
    await rm(dir, { recursive: true });
    expect(run.stdout).toBe(
      'workloadgroup.networking.istio.io/api created\nworkloadentry.networking.istio.io/db-2 created\n',
    );
  });

  it('lists entries of one namespace without a NAMESPACE column, with ages', async () => {
    clock = NOW + 3 * MINUTE;
    const run = await registrar(['get', 'we', '-n', 'shop']);
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n')[0]).toMatch(
      /^NAME\s+ADDRESS\s+CONNECTED\s+HEALTHY\s+ROUTABLE\s+GROUP\s+AGE$/,
    );
    expect(run.stdout).toMatch(/^db-1\s+10\.0\.0\.5\s+<none>\s+<none>\s+True\s+<none>\s+3m$/m);
  });

  it('adds the NAMESPACE column across all namespaces', async () => {
    const run = await registrar(['get', 'workloadentries', '-A']);
    expect(run.stdout.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME\s+ADDRESS/);
    expect(run.stdout).toMatch(/^shop\s+db-1\s+10\.0\.0\.5/m);
  });

  it('says so on stderr when a namespace has nothing, and succeeds', async () => {
    const run = await registrar(['get', 'wg']);
    expect(run).toEqual({
      code: 0,
      stdout: '',
      stderr: 'No resources found in default namespace.\n',
    });
  });

  it('prints a v1 List of Istio-shaped objects with -o json', async () => {
    const run = await registrar(['get', 'wg', '-n', 'shop', '-o', 'json']);
    const list = JSON.parse(run.stdout);
    expect(list.apiVersion).toBe('v1');
    expect(list.kind).toBe('List');
    expect(list.items.map((g: { metadata: { name: string } }) => g.metadata.name)).toEqual([
      'api',
      'web',
    ]);
    expect(list.items[1]).toMatchObject({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'shop', generation: 1 },
      spec: { template: { ports: { http: 8080 } }, probe: { httpGet: { port: 8080 } } },
    });
  });

  it('prints the single object when a name is given', async () => {
    const run = await registrar(['get', 'we', 'db-1', '-n', 'shop', '-o', 'json']);
    expect(JSON.parse(run.stdout)).toMatchObject({
      kind: 'WorkloadEntry',
      metadata: { name: 'db-1', namespace: 'shop' },
      spec: { address: '10.0.0.5', labels: { app: 'db' } },
    });
  });

  it('prints YAML that apply reads back unchanged', async () => {
    const yaml = await registrar(['get', 'we', '-n', 'shop', '-o', 'yaml']);
    const applied = await registrar(['apply', '-f', '-'], { stdin: yaml.stdout });
    expect(applied.stdout).toBe(
      'workloadentry.networking.istio.io/db-1 unchanged\nworkloadentry.networking.istio.io/db-2 unchanged\n',
    );
  });

  it('fails with exit 1 naming what was not found', async () => {
    const run = await registrar(['get', 'we', 'nope', '-n', 'shop']);
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: workloadentries "nope" not found in namespace "shop"\n',
    });
  });

  it('reports a changed group spec as configured and bumps its generation', async () => {
    const changed = GROUP_AND_ENTRY.split('---')[0]?.replace('http: 8080}', 'http: 9090}') ?? '';
    expect((await registrar(['apply', '-f', '-'], { stdin: changed })).stdout).toBe(
      'workloadgroup.networking.istio.io/web configured\n',
    );
    const run = await registrar(['get', 'wg', 'web', '-n', 'shop']);
    expect(run.stdout).toMatch(/^web\s+2\s+/m);
  });

  it('deletes an entry and a group, and fails for one that is not there', async () => {
    expect((await registrar(['delete', 'we', 'db-2', '-n', 'shop'])).stdout).toBe(
      'workloadentry.networking.istio.io "db-2" deleted\n',
    );
    expect((await registrar(['delete', 'wg', 'api', '-n', 'shop'])).stdout).toBe(
      'workloadgroup.networking.istio.io "api" deleted\n',
    );
    const again = await registrar(['delete', 'we', 'db-2', '-n', 'shop']);
    expect(again).toMatchObject({
      code: 1,
      stderr: 'error: workloadentries "db-2" not found in namespace "shop"\n',
    });
  });
});

describe('registrar delete wg cascades like Kubernetes garbage collection', () => {
  const GROUP = (namespace: string) => `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: web, namespace: ${namespace} }
spec: { template: { ports: { http: 8080 } } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: by-hand, namespace: ${namespace} }
spec: { address: 10.9.9.9 }
`;

  async function registerIn(namespace: string, name: string): Promise<void> {
    const outcome = await store.connect({
      entry: {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: { name, namespace },
        spec: { address: '10.0.0.1' },
      },
      autoRegistrationGroup: 'web',
      origin: 'test-origin',
      mayCreate: true,
      recordConnection: false,
      healthChecksEnabled: false,
      groupGeneration: 1,
      connectionId: `${namespace}-${name}`,
      connectedAt: NOW,
      controller: 'workload-registrar',
      identity: { principal: 'token:abc123', namespace },
    });
    expect(outcome).toBe('created');
  }

  async function entryNames(namespace: string): Promise<string[]> {
    return (await store.listEntries(namespace)).map((record) => record.entry.metadata.name).sort();
  }

  it('deletes the entries a group auto-registered along with it, and leaves hand-made ones', async () => {
    await registrar(['apply', '-f', '-'], { stdin: GROUP('cascade') });
    await registerIn('cascade', 'web-10.0.0.1');
    await registerIn('cascade', 'web-10.0.0.2');

    const run = await registrar(['delete', 'wg', 'web', '-n', 'cascade']);

    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      'workloadgroup.networking.istio.io "web" deleted\n' +
        'workloadentry.networking.istio.io "web-10.0.0.1" deleted (owned by the group)\n' +
        'workloadentry.networking.istio.io "web-10.0.0.2" deleted (owned by the group)\n',
    );
    expect(await entryNames('cascade')).toEqual(['by-hand']);
  });

  it('keeps the entries with --cascade orphan', async () => {
    await registrar(['apply', '-f', '-'], { stdin: GROUP('orphans') });
    await registerIn('orphans', 'web-10.0.0.1');

    const run = await registrar(['delete', 'wg', 'web', '-n', 'orphans', '--cascade', 'orphan']);

    expect(run.stdout).toBe('workloadgroup.networking.istio.io "web" deleted\n');
    expect(await entryNames('orphans')).toEqual(['by-hand', 'web-10.0.0.1']);
  });

  it('refuses an unknown cascade mode as a usage error', async () => {
    const run = await registrar([
      'delete',
      'wg',
      'web',
      '-n',
      'orphans',
      '--cascade',
      'foreground',
    ]);
    expect(run.code).toBe(2);
  });
});

describe('registrar apply refusals', () => {
  it('refuses an invalid document by name and field, and writes none of the others', async () => {
    const input = `${GROUP_AND_ENTRY.replaceAll('web', 'cart').replaceAll('db-1', 'db-9')}---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: pay, namespace: shop}
spec:
  template:
    ports: {http: eighty}
`;
    const run = await registrar(['apply', '-f', '-'], { stdin: input });

    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      "error: document 3 (WorkloadGroup pay): spec.template.ports.http: must be a port number 1-65535, got 'eighty'\nnothing was written\n",
    );
    expect((await registrar(['get', 'wg', 'cart', '-n', 'shop'])).code).toBe(1);
    expect((await registrar(['get', 'we', 'db-9', '-n', 'shop'])).code).toBe(1);
  });

  it('refuses an entry document that claims a group', async () => {
    const input =
      GROUP_AND_ENTRY.split('---\n')[1]?.replace(
        'namespace: shop',
        'namespace: shop\n  annotations: {istio.io/autoRegistrationGroup: web}',
      ) ?? '';
    const run = await registrar(['apply', '-f', '-'], { stdin: input.replace('db-1', 'db-3') });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^error: document 1 \(WorkloadEntry db-3\): metadata\.annotations\["istio\.io\/autoRegistrationGroup"\]: only auto-registration sets this/,
    );
    expect((await registrar(['get', 'we', 'db-3', '-n', 'shop'])).code).toBe(1);
  });
});

describe('registrar with auto-registered entries', () => {
  it('describes an entry with its verified identity and the generation it was built from', async () => {
    await registerVm('web-10-0-0-7', NOW - 10 * MINUTE, 'conn-1');
    const run = await registrar(['describe', 'we', 'web-10-0-0-7', '-n', 'shop']);

    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Annotations:\s+istio\.io\/autoRegistrationGroup: web$/m);
    expect(run.stdout).toMatch(
      /^ {2}Verified Identity:\s+token:abc123 \(namespace shop, service account web\)$/m,
    );
    // The group was applied again with a new spec above: generation 2.
    expect(run.stdout).toMatch(
      /^ {2}Group Generation:\s+1 \(the group is now at generation 2: this entry keeps the older template/m,
    );
    expect(run.stdout).toMatch(/^ {2}Connected:\s+True$/m);
    expect(run.stdout).toMatch(/^ {2}Ports:\s+http=8080$/m);
  });

  it('shows a hand-made entry as never swept', async () => {
    const run = await registrar(['describe', 'we', 'db-1', '-n', 'shop']);
    expect(run.stdout).toMatch(/Hand-made \(no istio\.io\/autoRegistrationGroup\): never swept/);
    expect(run.stdout).toMatch(/^ {2}Ports:\s+<none>$/m);
    expect(run.stdout).toMatch(/^ {2}Labels:\s+app=db$/m);
  });

  it('refuses a hand-made entry over an auto-registered one, writing nothing', async () => {
    const input = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: web-10-0-0-7, namespace: shop}
spec: {address: 10.9.9.9}
`;
    const run = await registrar(['apply', '-f', '-'], { stdin: input });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/an auto-registered entry shop\/web-10-0-0-7 exists/);
    const entry = JSON.parse(
      (await registrar(['get', 'we', 'web-10-0-0-7', '-n', 'shop', '-o', 'json'])).stdout,
    );
    expect(entry.spec.address).toBe('10.0.0.7');
  });

  it('sweeps a long-disconnected entry and never the hand-made one', async () => {
    await registerVm('web-10-0-0-8', NOW - 60 * MINUTE, 'conn-2');
    await store.leave({
      connectionId: 'conn-2',
      entry: { namespace: 'shop', name: 'web-10-0-0-8' },
      at: NOW - 59 * MINUTE,
    });

    const dryRun = await registrar(['sweep', '--dry-run']);
    expect(dryRun.code).toBe(0);
    expect(dryRun.stdout).toMatch(
      /^workloadentry\.networking\.istio\.io "web-10-0-0-8" would be deleted \(namespace shop, disconnected\)\n1 would be deleted; 1 candidate read; /,
    );
    expect((await registrar(['get', 'we', 'web-10-0-0-8', '-n', 'shop'])).code).toBe(0);

    const sweep = await registrar(['sweep']);
    expect(sweep.stdout).toMatch(
      /^workloadentry\.networking\.istio\.io "web-10-0-0-8" deleted \(namespace shop, disconnected\)\n1 deleted; /,
    );
    const names = (await registrar(['get', 'we', '-n', 'shop'])).stdout;
    expect(names).toMatch(/^db-1\s/m);
    expect(names).not.toMatch(/web-10-0-0-8/);
  });

  it('uses the grace period given on the command line', async () => {
    await registerVm('web-10-0-0-9', NOW - 10 * MINUTE, 'conn-3');
    await store.leave({
      connectionId: 'conn-3',
      entry: { namespace: 'shop', name: 'web-10-0-0-9' },
      at: NOW - 2 * MINUTE,
    });
    expect((await registrar(['sweep', '--dry-run'])).stdout).toMatch(/^0 would be deleted; /);
    expect((await registrar(['sweep', '--dry-run', '--grace-period', '1m'])).stdout).toMatch(
      /"web-10-0-0-9" would be deleted/,
    );
  });
});

describe('registrar token', () => {
  it('creates a token, lists it without its secret, and revokes it', async () => {
    const created = await registrar([
      'token',
      'create',
      '-n',
      'shop',
      '--service-account',
      'web',
      '--ttl',
      '2h',
    ]);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^wrt\.[A-Za-z0-9_-]{12}\.[A-Za-z0-9_-]{43}\n$/);
    const [, id, secret] = created.stdout.trim().split('.');

    const listed = await registrar(['token', 'list', '-A']);
    expect(listed.stdout.split('\n')[0]).toMatch(
      /^ID\s+NAMESPACE\s+SERVICE-ACCOUNT\s+EXPIRES\s+STATUS$/,
    );
    expect(listed.stdout).toContain(
      `${id}   shop        web               2026-03-01T14:00:00Z   active`,
    );
    expect(listed.stdout).not.toContain(secret);

    expect((await registrar(['token', 'revoke', id ?? ''])).stdout).toBe(`token "${id}" revoked\n`);
    expect((await registrar(['token', 'list', '-n', 'shop'])).stdout).toMatch(
      new RegExp(`^${id}\\s.*\\srevoked$`, 'm'),
    );
  });

  it('shows a token past its expiry as expired', async () => {
    const created = await registrar(['token', 'create', '-n', 'shop', '--ttl', '1m']);
    const id = created.stdout.split('.')[1];
    clock = NOW + 2 * MINUTE;
    expect((await registrar(['token', 'list', '-A'])).stdout).toMatch(
      new RegExp(`^${id}\\s+shop\\s+<any>\\s+\\S+\\s+expired$`, 'm'),
    );
  });

  it("takes an ID that begins with '-' after '--'", async () => {
    // Made before 0.3.0, one ID in 64 began with '-': after '--' it is the ID, not an option.
    const run = await registrar(['token', 'revoke', '--', '-AAAAAAAAAAA']);
    expect(run).toMatchObject({
      code: 1,
      stderr: 'error: token "-AAAAAAAAAAA" not found; see registrar token list\n',
    });
  });

  it('fails to revoke a token that does not exist', async () => {
    const run = await registrar(['token', 'revoke', 'AAAAAAAAAAAA']);
    expect(run).toMatchObject({
      code: 1,
      stderr: 'error: token "AAAAAAAAAAAA" not found; see registrar token list\n',
    });
  });
});

describe('registrar usage', () => {
  it.each([
    [['frobnicate']],
    [['get', 'pods']],
    [['get', 'we', '-o', 'xml']],
    [['get', 'we', '-o', 'jsonpath']],
    [['get', 'we', '-o', 'jsonpath={.items']],
    [['get', 'we', '-l', 'app in (web)']],
    [['get', 'we', '-l', 'Bad Key']],
    [['get', 'we', 'db-1', '-l', 'app=db']],
    [['get', 'we', 'we/db-1']],
    [['get', 'wg,we', '-w']],
    [['get', 'we', '--output-watch-events']],
    [['get', 'we', 'db-1', '-A']],
    [['get', 'we', '-n', 'Not_A_Namespace']],
    [['token', 'create', '-n', 'shop', '--ttl', '0s']],
    [['token', 'create', '-n', 'shop', '--ttl', '1w']],
    [['token', 'list', '-o', 'toml']],
    [['token', 'list', '-n', 'shop', '-A']],
    [['delete']],
    [['delete', 'we']],
    [['delete', 'we', 'db-1', '-f', 'web.yaml']],
    [['apply', '-f', 'no-such-file.yaml']],
    [['sweep', '--grace-period', 'soon']],
    [['apply']],
    [[]],
  ])('exits 2 on the usage error %j', async (args) => {
    const run = await registrar(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).not.toBe('');
  });

  it.each([
    [[]],
    [['apply']],
    [['get']],
    [['describe']],
    [['delete']],
    [['token']],
    [['token', 'create']],
    [['token', 'list']],
    [['token', 'revoke']],
    [['sweep']],
  ])('prints help for %j --help and exits 0', async (args) => {
    const run = await registrar([...args, '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: registrar/);
  });
});

describe('registrar target', () => {
  it('says how to configure a registry when nothing is configured', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'registrar-empty-'));
    const run = await registrar(['get', 'we'], { cwd: dir, env: {} });
    await rm(dir, { recursive: true });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `error: no registry configured: no .registrar/local.json in ${dir} or any parent directory, REGISTRAR_DATA_DIR is unset, and neither --table nor REGISTRAR_TABLE is set; start the local runtime with 'npm start' in your checkout, or pass --table <name> (and --endpoint <url> for a local DynamoDB)\n`,
    );
  });

  it('uses the registry the local runtime recorded in .registrar/local.json', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'registrar-local-'));
    await mkdir(join(dir, '.registrar'));
    const local = {
      url: 'ws://127.0.0.1:1/local',
      managementUrl: 'http://127.0.0.1:1',
      dynamoDbEndpoint: dynamo.endpoint,
      tableName: dynamo.tableName,
      region: 'us-east-1',
    };
    await writeFile(join(dir, '.registrar', 'local.json'), JSON.stringify(local));
    const run = await registrar(['get', 'we', 'db-1', '-n', 'shop', '-o', 'json'], {
      cwd: dir,
      env: {},
    });
    await rm(dir, { recursive: true });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).metadata.name).toBe('db-1');
  });

  it('prefers --endpoint and --table over the environment', async () => {
    const env = { REGISTRAR_DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', REGISTRAR_TABLE: 'elsewhere' };
    const run = await registrar(
      [
        '--endpoint',
        dynamo.endpoint,
        '--table',
        dynamo.tableName,
        'get',
        'we',
        'db-1',
        '-n',
        'shop',
      ],
      { env },
    );
    expect(run.code).toBe(0);
  });

  it('asks whether the local runtime is still running when its endpoint does not answer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'registrar-stale-'));
    await mkdir(join(dir, '.registrar'));
    // Port 9 (discard) refuses connections: a runtime that stopped without removing its file.
    const local = { dynamoDbEndpoint: 'http://127.0.0.1:9', tableName: 'workload-registrar' };
    await writeFile(join(dir, '.registrar', 'local.json'), JSON.stringify(local));
    const run = await registrar(['get', 'we'], { cwd: dir, env: {} });
    await rm(dir, { recursive: true });
    expect(run).toMatchObject({
      code: 1,
      stderr:
        "error: cannot reach DynamoDB at http://127.0.0.1:9 (from .registrar/local.json); is 'npm start' still running?\n",
    });
  });

  it('names the table and tells what to do when it does not exist', async () => {
    const run = await registrar(
      ['get', 'we', '--table', 'missing', '--endpoint', dynamo.endpoint],
      { env: {} },
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `error: no such table: table 'missing' at ${dynamo.endpoint} (from --table); check --table, or restart 'npm start'\n`,
    );
  });
});
