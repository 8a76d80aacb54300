import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * Habits kubectl users bring (issue 17): apply --dry-run, diff, get --show-labels, --sort-by,
 * -o custom-columns, and describe's Events. runCli in-process against a real table (dynalite)
 * with a fixed clock.
 */

const NOW = Date.parse('2026-03-01T12:00:00Z');
const MINUTE = 60_000;

const GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec:
  metadata: {labels: {app: web}}
  template: {ports: {http: 8080}, serviceAccount: web}
`;
const ENTRY = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: db-1, namespace: shop, labels: {app: db}}
spec: {address: 10.0.0.5}
`;

let dynamo: TestDynamo;
let store: RegistrarStore;
let dir: string;

function registrar(args: string[], stdin = '', now = NOW) {
  return captureCli(args, {
    env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName },
    cwd: dir,
    stdin,
    now: () => now,
  });
}

async function registerVm(name: string, address: string, connectedAt: number, zone: string) {
  const outcome = await store.connect({
    entry: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {
        name,
        namespace: 'shop',
        labels: { app: 'web', zone },
        creationTimestamp: new Date(connectedAt).toISOString(),
      },
      spec: { address, labels: { app: 'web' }, locality: `eu-west-1/${zone}` },
    },
    autoRegistrationGroup: 'web',
    origin: `origin-${name}`,
    mayCreate: true,
    recordConnection: false,
    healthChecksEnabled: true,
    groupGeneration: 1,
    connectionId: `conn-${name}`,
    connectedAt,
    controller: 'workload-registrar',
    identity: { principal: 'token:abc123', namespace: 'shop', serviceAccount: 'web' },
  });
  expect(outcome).toBe('created');
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
  dir = await mkdtemp(join(tmpdir(), 'registrar-habits-'));
  expect((await registrar(['apply', '-f', '-'], GROUP)).code).toBe(0);
  // Registered out of name order: b first, then a.
  await registerVm('web-10.0.0.21', '10.0.0.21', NOW - 20 * MINUTE, 'eu-west-1b');
  await registerVm('web-10.0.0.20', '10.0.0.20', NOW - 10 * MINUTE, 'eu-west-1a');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await dynamo?.close();
});

describe('get', () => {
  it('adds a LABELS column last with --show-labels', async () => {
    const run = await registrar(['get', 'we', '-n', 'shop', '--show-labels']);
    expect(run.stdout.split('\n')[0]).toMatch(/\sAGE\s+LABELS$/);
    expect(run.stdout).toMatch(/^web-10\.0\.0\.20\s.*\s10m\s+app=web,zone=eu-west-1a$/m);
  });

  it('sorts by a field with --sort-by, in either spelling', async () => {
    for (const sortBy of ['.metadata.creationTimestamp', '{.metadata.creationTimestamp}']) {
      const run = await registrar(['get', 'we', '-n', 'shop', '--sort-by', sortBy, '-o', 'name']);
      expect(run.stdout).toBe(
        'workloadentry.networking.istio.io/web-10.0.0.21\nworkloadentry.networking.istio.io/web-10.0.0.20\n',
      );
    }
    const byName = await registrar(['get', 'we', '-n', 'shop', '-o', 'name']);
    expect(byName.stdout.split('\n')[0]).toContain('web-10.0.0.20');
  });

  it('refuses a --sort-by that is not a jsonpath expression', async () => {
    const run = await registrar(['get', 'we', '--sort-by', '{.metadata[}']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--sort-by.*invalid jsonpath/);
  });

  it('prints the columns of -o custom-columns, <none> for a missing field', async () => {
    const run = await registrar([
      'get',
      'we',
      '-n',
      'shop',
      '-o',
      'custom-columns=NAME:.metadata.name,ADDRESS:.spec.address,NETWORK:.spec.network',
    ]);
    expect(run.stdout).toMatch(/^NAME\s+ADDRESS\s+NETWORK\n/);
    expect(run.stdout).toMatch(/^web-10\.0\.0\.20\s+10\.0\.0\.20\s+<none>$/m);
  });

  it('reads the columns from -o custom-columns-file', async () => {
    const file = join(dir, 'columns.txt');
    await writeFile(file, 'NAME          ZONE\n.metadata.name  {.metadata.labels.zone}\n');
    const run = await registrar(['get', 'we', '-n', 'shop', '-o', `custom-columns-file=${file}`]);
    expect(run.stdout).toMatch(/^web-10\.0\.0\.21\s+eu-west-1b$/m);
  });

  it('refuses a custom column without its expression (exit 2)', async () => {
    const run = await registrar(['get', 'we', '-o', 'custom-columns=NAME']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("'NAME' is not HEADER:EXPRESSION");
  });
});

describe('apply --dry-run', () => {
  it('client: checks the documents and writes nothing', async () => {
    const run = await registrar(['apply', '--dry-run=client', '-f', '-'], ENTRY);
    expect(run).toMatchObject({
      code: 0,
      stdout: 'workloadentry.networking.istio.io/db-1 checked (dry run)\n',
    });
    expect(await store.getEntry({ namespace: 'shop', name: 'db-1' })).toBeUndefined();
  });

  it('client: refuses an invalid document', async () => {
    const run = await registrar(
      ['apply', '--dry-run=client', '-f', '-'],
      ENTRY.replace('{address: 10.0.0.5}', '{address: 10.0.0.5, bogus: 1}'),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('spec.bogus: unknown field');
  });

  it('server: says created, configured or unchanged from the registry, and writes nothing', async () => {
    const changed = GROUP.replace('8080', '9090');
    const run = await registrar(
      ['apply', '--dry-run=server', '-f', '-'],
      `${changed}---\n${ENTRY}`,
    );
    expect(run.stdout).toBe(
      'workloadgroup.networking.istio.io/web configured (server dry run)\n' +
        'workloadentry.networking.istio.io/db-1 created (server dry run)\n',
    );
    expect(await store.getEntry({ namespace: 'shop', name: 'db-1' })).toBeUndefined();
    expect(
      (await store.getGroup({ namespace: 'shop', name: 'web' }))?.group.spec.template.ports,
    ).toEqual({ http: 8080 });
    const same = await registrar(['apply', '--dry-run=server', '-f', '-'], GROUP);
    expect(same.stdout).toBe('workloadgroup.networking.istio.io/web unchanged (server dry run)\n');
  });
});

describe('diff', () => {
  it('exits 0 and prints nothing when the registry holds the file', async () => {
    const run = await registrar(['diff', '-f', '-'], GROUP);
    expect(run).toMatchObject({ code: 0, stdout: '' });
  });

  it('exits 1 with a unified diff of what apply would change', async () => {
    const run = await registrar(['diff', '-f', '-'], GROUP.replace('8080', '9090'));
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^--- .*LIVE\/networking\.istio\.io\.v1\.WorkloadGroup\.shop\.web/m);
    expect(run.stdout).toMatch(/^-\s+http: 8080$/m);
    expect(run.stdout).toMatch(/^\+\s+http: 9090$/m);
    expect(run.stdout).toMatch(/^-\s+generation: 1$/m);
    expect(run.stdout).toMatch(/^\+\s+generation: 2$/m);
  });

  it('shows a new object as all added lines', async () => {
    const run = await registrar(['diff', '-f', '-'], ENTRY);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^\+\s+address: 10\.0\.0\.5$/m);
  });

  it('exits 2 on an error: an invalid document, or an auto-registered entry in the file', async () => {
    const invalid = await registrar(
      ['diff', '-f', '-'],
      ENTRY.replace('{address: 10.0.0.5}', '{address: 10.0.0.5, bogus: 1}'),
    );
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('spec.bogus: unknown field');
    const owned = ENTRY.replace('db-1', 'web-10.0.0.20');
    const refused = await registrar(['diff', '-f', '-'], owned);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('auto-registered');
  });
});

describe('describe we: Events', () => {
  it('tells when the entry registered, connected, disconnected and turned unhealthy, and why', async () => {
    const entry = { namespace: 'shop', name: 'web-10.0.0.21' };
    const holder = { connectionId: 'conn-web-10.0.0.21', entry };
    expect(
      await store.reportHealth({
        ...holder,
        healthy: false,
        message: 'GET /ready: 503',
        at: NOW - 5 * MINUTE,
      }),
    ).toBe('transitioned');
    const events = async () => {
      const run = await registrar(['describe', 'we', 'web-10.0.0.21', '-n', 'shop']);
      const section = run.stdout.slice(run.stdout.indexOf('Events:'));
      expect(section).toMatch(/^ {2}Type\s+Reason\s+Age\s+From\s+Message$/m);
      return section.split('\n').slice(3).filter(Boolean);
    };
    const connected = await events();
    // A new entry's history is recorded from its creation on: its connect is the Registered
    // event (derived from its creation time), its health transition was stored with it.
    expect(connected).toHaveLength(2);
    expect(connected[0]).toMatch(
      /^ {2}Normal\s+Registered\s+20m\s+connect\s+created from WorkloadGroup web/,
    );
    expect(connected[1]).toMatch(
      /^ {2}Warning\s+Unhealthy\s+5m\s+agent\s+Healthy turned False: GET \/ready: 503$/,
    );
    await store.leave({ ...holder, at: NOW - 2 * MINUTE });
    const left = await events();
    expect(left).toHaveLength(3);
    expect(left[2]).toMatch(
      /^ {2}Warning\s+Disconnected\s+2m\s+disconnect\s+the last connection conn-web-10\.0\.0\.21 went away without a clean close/,
    );
  });

  it('shows an applied event for a hand-made entry', async () => {
    expect((await registrar(['apply', '-f', '-'], ENTRY)).code).toBe(0);
    const run = await registrar(['describe', 'we', 'db-1', '-n', 'shop'], '', NOW + MINUTE);
    expect(run.stdout).toMatch(
      /^ {2}Normal\s+Applied\s+60s\s+operator\s+created by registrar apply \(hand-made\)$/m,
    );
  });
});

describe('export --format linkerd: what was left out', () => {
  it('says it once per group and gives hand-made entries advice that fits them', async () => {
    // web (no meshTLS annotations) holds web-10.0.0.20 and web-10.0.0.21; db-1 is hand-made.
    expect((await registrar(['apply', '-f', '-'], ENTRY)).code).toBe(0);
    const run = await registrar(['export', '--format', 'linkerd', '-A']);
    expect(run.code).toBe(0);
    const warnings = run.stderr.split('\n').filter((line) => line.startsWith('warning:'));
    expect(warnings).toEqual([
      "warning: 2 entries of WorkloadGroup shop/web left out: the group has no 'workload-registrar/linkerd-identity' or 'workload-registrar/linkerd-server-name' annotation; annotate the group once (below) and export again",
      "warning: 1 hand-made entry left out (shop/db-1): an entry without a group carries 'workload-registrar/linkerd-identity' and 'workload-registrar/linkerd-server-name' in its own metadata.annotations; add them to its YAML and registrar apply it again",
    ]);
    expect(run.stderr.match(/spiffe:\/\//g)).toHaveLength(1);
  });

  it('diff of a hand-made entry as the registry holds it exits 0', async () => {
    const same = await registrar(['diff', '-f', '-'], ENTRY);
    expect(same).toMatchObject({ code: 0, stdout: '' });
    const moved = await registrar(['diff', '-f', '-'], ENTRY.replace('10.0.0.5', '10.0.0.6'));
    expect(moved.code).toBe(1);
    expect(moved.stdout).toMatch(/^-\s+address: 10\.0\.0\.5\n\+\s+address: 10\.0\.0\.6$/m);
  });
});
