import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { DynamoDbSweepPolicyStore } from '../../lib/store/dynamodb-sweep-policy-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * kubectl's flags on every list, describe and delete (issue 26): -n/-A on token and policy
 * lists, the same -o formats and --no-headers everywhere, -L, describe -A/-l, delete
 * -l/--all/--dry-run, a bare --dry-run meaning client. runCli in-process against dynalite.
 */

const NOW = Date.parse('2026-03-01T12:00:00Z');
const POLICY = {
  gracePeriodMs: 300_000,
  maxConnectionAgeMs: 7_200_000,
  livenessIntervalMs: 300_000,
  sweepIntervalMs: 60_000,
};
let dynamo: TestDynamo;
let store: RegistrarStore;
let dir: string;

function registrar(args: string[], stdin = '') {
  return captureCli(args, {
    env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName },
    cwd: dir,
    stdin,
    now: () => NOW,
  });
}

const group = (
  name: string,
  namespace: string,
  version: string,
) => `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  metadata: {labels: {app: ${name}, version: ${version}}}
  template: {ports: {http: 8080}}
`;

async function register(namespace: string, groupName: string, address: string, version: string) {
  const change = connectChange({
    name: `${groupName}-${address}`,
    namespace,
    connectionId: `c-${namespace}-${address}`,
    connectedAt: NOW - 60_000,
  });
  change.autoRegistrationGroup = groupName;
  change.entry.spec.address = address;
  change.entry.metadata.labels = { app: groupName, version };
  expect(await store.connect(change)).toBe('created');
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
  dir = await mkdtemp(join(tmpdir(), 'registrar-everywhere-'));
  const groups = [
    group('web', 'shop', 'v1'),
    group('api', 'shop', 'v2'),
    group('web', 'blog', 'v1'),
  ];
  expect((await registrar(['apply', '-f', '-'], groups.join('---\n'))).code).toBe(0);
  await register('shop', 'web', '10.1.0.1', 'v1');
  await register('shop', 'web', '10.1.0.2', 'v2');
  await register('shop', 'api', '10.1.0.3', 'v2');
  await register('blog', 'web', '10.2.0.1', 'v1');
  for (const [ns, sa] of [
    ['shop', 'web'],
    ['blog', ''],
  ] as const) {
    const args = ['token', 'create', '-n', ns, ...(sa ? ['--service-account', sa] : [])];
    expect((await registrar(args)).code).toBe(0);
  }
  for (const ns of ['shop', 'blog']) {
    const role = `arn:aws:iam::123456789012:role/${ns}-vm`;
    expect((await registrar(['policy', 'allow', '--role-arn', role, '-n', ns])).code).toBe(0);
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await dynamo?.close();
});

describe('get', () => {
  it('prints rows only with --no-headers', async () => {
    const run = await registrar(['get', 'we', '-n', 'shop', '--no-headers']);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^api-10\.1\.0\.3\s+10\.1\.0\.3\s+True/);
    expect(run.stdout).not.toContain('NAME');
  });

  it('adds a column per label key with -L, named after the key', async () => {
    const run = await registrar(['get', 'we', '-n', 'shop', '-L', 'version', '-L', 'app']);
    expect(run.stdout.split('\n')[0]).toMatch(/\sAGE\s+VERSION\s+APP$/);
    expect(run.stdout).toMatch(/^web-10\.1\.0\.2\s.*\sv2\s+web$/m);
  });
});

describe('token list and policy list', () => {
  it('list one namespace with -n, without a NAMESPACE column', async () => {
    const run = await registrar(['token', 'list', '-n', 'blog']);
    expect(run.stdout.split('\n')[0]).toMatch(/^ID\s+SERVICE-ACCOUNT\s+EXPIRES\s+STATUS$/);
    expect(run.stdout.trim().split('\n')).toHaveLength(2);
    const policies = await registrar(['policy', 'list', '-n', 'shop', '--no-headers']);
    expect(policies.stdout.trim()).toMatch(
      /^arn:aws:iam::123456789012:role\/shop-vm\s+<any>\s+\S+$/,
    );
  });

  it('list every namespace with -A, and the default namespace without -n', async () => {
    const all = await registrar(['token', 'list', '-A', '-o', 'wide']);
    expect(all.stdout.split('\n')[0]).toMatch(
      /^ID\s+NAMESPACE\s+SERVICE-ACCOUNT\s+EXPIRES\s+STATUS\s+CREATED\s+REVOKED\s+NETWORKS$/,
    );
    expect(all.stdout).toMatch(/\sshop\s+web\s/);
    expect(all.stdout).toMatch(/\sblog\s+<any>\s/);
    const none = await registrar(['policy', 'list']);
    expect(none).toMatchObject({
      code: 0,
      stdout: '',
      stderr: 'No policies found in default namespace: no IAM caller may register there.\n',
    });
  });

  it('take -o name, jsonpath and custom-columns as get does', async () => {
    const names = await registrar(['token', 'list', '-A', '-o', 'name']);
    expect(names.stdout).toMatch(/^(token\/[A-Za-z0-9_-]+\n){2}$/);
    const json = await registrar([
      'policy',
      'list',
      '-A',
      '-o',
      'jsonpath={range .items[*]}{.namespace}{" "}{end}',
    ]);
    expect(json.stdout).toBe('blog shop ');
    const columns = await registrar([
      'token',
      'list',
      '-n',
      'shop',
      '-o',
      'custom-columns=NS:.namespace,SA:.serviceAccount',
    ]);
    expect(columns.stdout).toBe('NS     SA\nshop   web\n');
  });
});

describe('sweep status', () => {
  it('takes -o yaml and -o jsonpath', async () => {
    const yaml = parse((await registrar(['sweep', 'status', '-o', 'yaml'])).stdout);
    expect(yaml).toMatchObject({ mode: 'normal' });
    const mode = await registrar(['sweep', 'status', '-o', 'jsonpath={.mode}']);
    expect(mode.stdout).toBe('normal');
  });
});

describe('describe', () => {
  it('describes every namespace with -A and only matching objects with -l', async () => {
    const all = await registrar(['describe', 'we', '-A', '-l', 'app=web']);
    const names = [...all.stdout.matchAll(/^Name:\s+(\S+)$/gm)].map((m) => m[1]);
    expect(names).toEqual(['web-10.2.0.1', 'web-10.1.0.1', 'web-10.1.0.2']);
    const v2 = await registrar(['describe', 'we', '-n', 'shop', '-l', 'version=v2']);
    expect([...v2.stdout.matchAll(/^Name:\s+(\S+)$/gm)].map((m) => m[1])).toEqual([
      'api-10.1.0.3',
      'web-10.1.0.2',
    ]);
  });

  it('refuses a name with -A or -l (exit 2)', async () => {
    expect((await registrar(['describe', 'we', 'web-10.1.0.1', '-A'])).code).toBe(2);
    expect((await registrar(['describe', 'we', 'web-10.1.0.1', '-l', 'app=web'])).code).toBe(2);
  });
});

describe('delete', () => {
  it('--dry-run alone is client: it says what would go and deletes nothing', async () => {
    const run = await registrar(['delete', 'we', '-l', 'version=v2', '-n', 'shop', '--dry-run']);
    expect(run.stdout).toBe(
      'workloadentry.networking.istio.io "api-10.1.0.3" deleted (dry run)\n' +
        'workloadentry.networking.istio.io "web-10.1.0.2" deleted (dry run)\n',
    );
    expect(await store.getEntry({ namespace: 'shop', name: 'api-10.1.0.3' })).toBeDefined();
  });

  it('--dry-run=server reads the registry: a group lists the entries it would take along', async () => {
    const run = await registrar(['delete', 'wg', 'web', '-n', 'shop', '--dry-run=server']);
    expect(run.stdout).toBe(
      'workloadgroup.networking.istio.io "web" deleted (server dry run)\n' +
        'workloadentry.networking.istio.io "web-10.1.0.1" deleted (owned by the group) (server dry run)\n' +
        'workloadentry.networking.istio.io "web-10.1.0.2" deleted (owned by the group) (server dry run)\n',
    );
    const missing = await registrar(['delete', 'we', 'nope', '-n', 'shop', '--dry-run=server']);
    expect(missing.code).toBe(1);
    expect(await store.getGroup({ namespace: 'shop', name: 'web' })).toBeDefined();
  });

  it('-l deletes the matching objects of the namespace only', async () => {
    const run = await registrar(['delete', 'we', '-l', 'version=v2', '-n', 'shop']);
    expect(run.code).toBe(0);
    expect(await store.getEntry({ namespace: 'shop', name: 'web-10.1.0.2' })).toBeUndefined();
    expect(await store.getEntry({ namespace: 'shop', name: 'api-10.1.0.3' })).toBeUndefined();
    expect(await store.getEntry({ namespace: 'shop', name: 'web-10.1.0.1' })).toBeDefined();
  });

  it('--all deletes every object of the type in the namespace, and no other', async () => {
    const run = await registrar(['delete', 'we', '--all', '-n', 'blog']);
    expect(run.stdout).toContain('"web-10.2.0.1" deleted');
    expect(await store.getEntry({ namespace: 'blog', name: 'web-10.2.0.1' })).toBeUndefined();
    expect(await store.getEntry({ namespace: 'shop', name: 'web-10.1.0.1' })).toBeDefined();
  });

  it('refuses names with -l or --all, and both together (exit 2)', async () => {
    expect((await registrar(['delete', 'we', 'x', '--all'])).code).toBe(2);
    expect((await registrar(['delete', 'we', '--all', '-l', 'a=b'])).code).toBe(2);
  });
});

describe('apply', () => {
  it('--dry-run alone is client, as in kubectl', async () => {
    const run = await registrar(['apply', '--dry-run', '-f', '-'], group('new', 'shop', 'v1'));
    expect(run).toMatchObject({
      code: 0,
      stdout: 'workloadgroup.networking.istio.io/new checked (dry run)\n',
    });
    expect(await store.getGroup({ namespace: 'shop', name: 'new' })).toBeUndefined();
  });
});

describe('token create', () => {
  it('says nothing more than the token for a token-mode registrar', async () => {
    await new DynamoDbSweepPolicyStore(dynamo.client, dynamo.tableName).record(
      { ...POLICY, authMode: 'token' },
      NOW,
    );
    const run = await registrar(['token', 'create', '-n', 'shop']);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
  });
});
