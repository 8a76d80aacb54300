import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * Issue 38: every command that changes the registry takes `--dry-run` and then writes
 * nothing (each case reads the registry after, through the store or a listing), and what a
 * run reports is on stdout, in the `-o` formats a listing takes. runCli in-process against
 * dynalite.
 */

const NOW = Date.parse('2026-03-01T12:00:00Z');
const MINUTE = 60_000;
const ROLE = 'arn:aws:iam::123456789012:role/web-vm';
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

async function ok(args: string[], stdin = '') {
  const run = await registrar(args, stdin);
  expect(run.code, `registrar ${args.join(' ')}: ${run.stderr}`).toBe(0);
  return run;
}

const group = (namespace: string) => `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: ${namespace}}
spec:
  template: {ports: {http: 8080}}
`;

/** An entry of group web whose VM left `minutesAgo`, on instance `instanceId` if given. */
async function departed(
  namespace: string,
  address: string,
  minutesAgo: number,
  instanceId?: string,
) {
  const name = `web-${address}`;
  const change = connectChange({
    name,
    namespace,
    connectionId: `c-${namespace}-${address}`,
    connectedAt: NOW - (minutesAgo + 1) * MINUTE,
  });
  change.entry.spec.address = address;
  if (instanceId) change.instanceId = instanceId;
  expect(await store.connect(change)).toBe('created');
  if (minutesAgo > 0) {
    await store.leave({
      connectionId: `c-${namespace}-${address}`,
      entry: { namespace, name },
      at: NOW - minutesAgo * MINUTE,
    });
  }
}

const entryOf = (namespace: string, address: string) =>
  store.getEntry({ namespace, name: `web-${address}` });

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
  dir = await mkdtemp(join(tmpdir(), 'registrar-dry-run-'));
  await ok(['apply', '-f', '-'], [group('shop'), group('blog')].join('---\n'));
  await departed('shop', '10.1.0.1', 60);
  await departed('blog', '10.2.0.1', 60);
  await departed('shop', '10.1.0.2', 0, 'i-0123456789abcdef0');
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  await dynamo?.close();
});

describe('registrar sweep', () => {
  it('--dry-run says its result on stdout, also what is due nowhere', async () => {
    const run = await ok(['sweep', '--dry-run', '-n', 'other']);
    expect(run.stdout).toMatch(/^0 would be deleted in namespace other; 0 candidates read; /);
  });

  it('-n sweeps one namespace: a dry run lists only its entries, and a sweep deletes only them', async () => {
    const dry = await ok(['sweep', '--dry-run', '-n', 'shop', '-o', 'name']);
    expect(dry.stdout).toBe('workloadentry.networking.istio.io/web-10.1.0.1\n');
    expect(dry.stderr).toMatch(/^1 would be deleted in namespace shop; 1 candidate read; /m);
    expect(await entryOf('shop', '10.1.0.1')).toBeDefined();

    const json = JSON.parse((await ok(['sweep', '-n', 'blog', '-o', 'json'])).stdout);
    expect(json).toMatchObject({
      dryRun: false,
      namespace: 'blog',
      deleted: [{ namespace: 'blog', name: 'web-10.2.0.1', reason: 'disconnected' }],
      policy: { gracePeriod: '5m' },
    });
    expect(await entryOf('blog', '10.2.0.1')).toBeUndefined();
    expect(await entryOf('shop', '10.1.0.1')).toBeDefined();
  });
});

describe('--dry-run writes nothing', () => {
  it('delete wg lists the entries it would take along, and deletes none', async () => {
    const run = await ok(['delete', 'wg', 'web', '-n', 'shop', '--dry-run']);
    expect(run.stdout).toBe(
      'workloadgroup.networking.istio.io "web" deleted (dry run)\n' +
        'workloadentry.networking.istio.io "web-10.1.0.1" deleted (owned by the group) (dry run)\n' +
        'workloadentry.networking.istio.io "web-10.1.0.2" deleted (owned by the group) (dry run)\n',
    );
    expect(await store.getGroup({ namespace: 'shop', name: 'web' })).toBeDefined();
    expect(await entryOf('shop', '10.1.0.2')).toBeDefined();
  });

  it('namespace set says the settings it would leave; namespace reset keeps them', async () => {
    const set = await ok(['namespace', 'set', '-n', 'shop', '--max-entries', '7', '--dry-run']);
    expect(set.stdout).toMatch(/^namespace "shop" configured \(dry run\): max-entries 7, /);
    const before = JSON.parse((await ok(['namespace', 'get', '-n', 'shop', '-o', 'json'])).stdout);
    expect(before.items[0].defaults).toContain('maxEntries');

    await ok(['namespace', 'set', '-n', 'shop', '--max-entries', '9']);
    const reset = await ok(['namespace', 'reset', '-n', 'shop', '--dry-run=server']);
    expect(reset.stdout).toMatch(/^namespace "shop" reset \(server dry run\): /);
    const after = JSON.parse((await ok(['namespace', 'get', '-n', 'shop', '-o', 'json'])).stdout);
    expect(after.items[0].maxEntries).toBe(9);
    // A listing, so -o name too, as get's.
    expect((await ok(['namespace', 'get', '-A', '-o', 'name'])).stdout).toBe(
      'namespace/blog\nnamespace/shop\n',
    );
  });

  it('policy allow and policy revoke', async () => {
    const allow = await ok(['policy', 'allow', '--role-arn', ROLE, '-n', 'shop', '--dry-run']);
    expect(allow.stdout).toBe(`role ${ROLE} may register in namespace "shop" (dry run)\n`);
    expect((await ok(['policy', 'list', '-n', 'shop', '-o', 'name'])).stdout).toBe('');

    await ok(['policy', 'allow', '--role-arn', ROLE, '-n', 'shop']);
    const revoke = await ok(['policy', 'revoke', '--role-arn', ROLE, '-n', 'shop', '--dry-run']);
    expect(revoke.stdout).toMatch(/may no longer register in namespace "shop" \(dry run\)\n/);
    expect((await ok(['policy', 'list', '-n', 'shop', '-o', 'name'])).stdout).toBe(
      `policy/${ROLE}#shop\n`,
    );
  });

  it('token create prints no token and stores none; token revoke keeps it valid', async () => {
    const create = await ok(['token', 'create', '-n', 'blog', '--dry-run']);
    expect(create.stdout).toMatch(/^token for namespace "blog" .* created \(dry run\)\n$/);
    expect((await ok(['token', 'list', '-n', 'blog', '-o', 'name'])).stdout).toBe('');

    await ok(['token', 'create', '-n', 'blog']);
    const [id] = JSON.parse(
      (await ok(['token', 'list', '-n', 'blog', '-o', 'json'])).stdout,
    ).items.map((token: { id: string }) => token.id);
    const revoke = await ok(['token', 'revoke', id, '--dry-run']);
    expect(revoke.stdout).toMatch(new RegExp(`^token "${id}" revoked \\(dry run\\)\\n`));
    const listed = await ok(['token', 'list', '-n', 'blog', '--no-headers']);
    expect(listed.stdout).toMatch(/\sactive\s*$/m);
  });

  it('rollout pause and resume', async () => {
    const paused = async () =>
      JSON.parse((await ok(['rollout', 'status', 'wg/web', '-n', 'shop', '-o', 'json'])).stdout)
        .paused;
    const pause = await ok(['rollout', 'pause', 'wg/web', '-n', 'shop', '--dry-run']);
    expect(pause.stdout).toBe('workloadgroup.networking.istio.io/web paused (dry run)\n');
    expect(await paused()).toBe(false);

    await ok(['rollout', 'pause', 'wg/web', '-n', 'shop']);
    await ok(['rollout', 'resume', 'wg/web', '-n', 'shop', '--dry-run']);
    expect(await paused()).toBe(true);
  });

  it('migrate run lists what would run and leaves the schema record as it was', async () => {
    const before = (await ok(['migrate', 'status', '-o', 'yaml'])).stdout;
    const run = await ok(['migrate', 'run', '--dry-run']);
    expect(run.stdout).toMatch(
      /^(migration \d+ \S+ run \(dry run\)\n)+$|^nothing to migrate \(dry run\)\n$/,
    );
    expect((await ok(['migrate', 'status', '-o', 'yaml'])).stdout).toBe(before);
    expect(parse(before)).toHaveProperty('migrations');
  });

  it("ec2-event lists the instance's entries and removes none", async () => {
    const run = await ok(['ec2-event', '--instance-id', 'i-0123456789abcdef0', '--dry-run']);
    expect(run.stdout).toBe(
      'workloadentry "shop/web-10.1.0.2" removed (dry run)\n' +
        'instance i-0123456789abcdef0 terminated: 1 removed (dry run)\n',
    );
    expect(await entryOf('shop', '10.1.0.2')).toBeDefined();
  });
});

describe('-o on apply and export', () => {
  const entry = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: db-1, namespace: shop}
spec: {address: 10.1.9.9}
`;

  it('apply -o name prints TYPE/NAME; --dry-run -o yaml the object it would write', async () => {
    const dry = await ok(['apply', '-f', '-', '--dry-run', '-o', 'yaml'], entry);
    expect(parse(dry.stdout)).toMatchObject({
      kind: 'WorkloadEntry',
      spec: { address: '10.1.9.9' },
    });
    expect(await store.getEntry({ namespace: 'shop', name: 'db-1' })).toBeUndefined();

    const named = await ok(['apply', '-f', '-', '-o', 'name'], entry);
    expect(named.stdout).toBe('workloadentry.networking.istio.io/db-1\n');
    const both = await ok(['apply', '-f', '-', '-o', 'json'], `${entry}---\n${group('shop')}`);
    const list = JSON.parse(both.stdout);
    expect(list.kind).toBe('List');
    expect(list.items.map((item: { kind: string }) => item.kind)).toEqual([
      'WorkloadEntry',
      'WorkloadGroup',
    ]);
    // As the registry holds it after the apply: the group with its generation.
    expect(list.items[1].metadata.generation).toEqual(expect.any(Number));
  });

  it('export -o json is a v1 List of the objects; -o name one per line', async () => {
    const json = JSON.parse(
      (await ok(['export', '--format', 'istio', '-n', 'shop', '-o', 'json'])).stdout,
    );
    expect(json.kind).toBe('List');
    expect(json.items.map((item: { metadata: { name: string } }) => item.metadata.name)).toContain(
      'web-10.1.0.2',
    );
    const names = await ok(['export', '--format', 'istio', '-n', 'shop', '-o', 'name']);
    expect(names.stdout).toMatch(/^workloadentry\/web-10\.1\.0\.2$/m);
  });
});
