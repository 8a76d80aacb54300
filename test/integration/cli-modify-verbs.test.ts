import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * kubectl's everyday verbs through the CLI (in-process) against a real table (dynalite):
 * label, annotate, patch (merge and JSON), edit ($EDITOR), version, metadata.uid in every
 * printed object, and the resources get takes in its refusal. Each verb has an accepting case
 * and a refusing one that names the field and leaves the registry as it was.
 */

const NOW = Date.parse('2026-03-01T12:00:00Z');
const GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop, labels: {tier: a}}
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

function registrar(args: string[], env: Record<string, string> = {}) {
  return captureCli(args, {
    env: {
      REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
      REGISTRAR_TABLE: dynamo.tableName,
      ...env,
    },
    cwd: dir,
    now: () => NOW,
  });
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads fields of kubectl-shaped JSON
async function groupJson(): Promise<Record<string, any>> {
  const run = await registrar(['get', 'wg', 'web', '-n', 'shop', '-o', 'json']);
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout);
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
  dir = await mkdtemp(join(tmpdir(), 'registrar-verbs-'));
  await writeFile(join(dir, 'objects.yaml'), `${GROUP}---\n${ENTRY}`);
  expect((await registrar(['apply', '-f', join(dir, 'objects.yaml')])).code).toBe(0);
  const outcome = await store.connect({
    entry: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {
        name: 'web-10.0.0.20',
        namespace: 'shop',
        labels: { app: 'web' },
        creationTimestamp: new Date(NOW).toISOString(),
      },
      spec: { address: '10.0.0.20', labels: { app: 'web' } },
    },
    autoRegistrationGroup: 'web',
    origin: 'origin-1',
    mayCreate: true,
    recordConnection: false,
    healthChecksEnabled: false,
    groupGeneration: 1,
    connectionId: 'conn-1',
    connectedAt: NOW,
    controller: 'workload-registrar',
    identity: { principal: 'token:abc', namespace: 'shop', serviceAccount: 'web' },
  });
  expect(outcome).toBe('created');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await dynamo?.close();
});

describe('registrar label and annotate', () => {
  it('sets and removes a group label, and refuses to overwrite without --overwrite', async () => {
    const set = await registrar(['label', 'wg', 'web', '-n', 'shop', 'team=payments']);
    expect(set.stdout).toBe('workloadgroup.networking.istio.io/web labeled\n');
    expect((await groupJson()).metadata.labels).toEqual({ tier: 'a', team: 'payments' });

    const refused = await registrar(['label', 'wg', 'web', '-n', 'shop', 'tier=b']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("'tier' already has a value (a), and --overwrite is false");
    expect((await groupJson()).metadata.labels.tier).toBe('a');

    const over = await registrar([
      'label',
      'wg',
      'web',
      '-n',
      'shop',
      'tier=b',
      'team-',
      '--overwrite',
    ]);
    expect(over.code).toBe(0);
    expect((await groupJson()).metadata.labels).toEqual({ tier: 'b' });
  });

  it('annotates a hand-made entry, and refuses a system annotation a group would hand its entries', async () => {
    const run = await registrar(['annotate', 'we', 'db-1', '-n', 'shop', 'owner=dba']);
    expect(run.stdout).toBe('workloadentry.networking.istio.io/db-1 annotated\n');
    const forged = await registrar([
      'patch',
      'wg',
      'web',
      '-n',
      'shop',
      '-p',
      '{"spec":{"metadata":{"annotations":{"istio.io/connectedAt":"2020-01-01T00:00:00Z"}}}}',
    ]);
    expect(forged.code).not.toBe(0);
    expect(forged.stderr).toContain('istio.io/connectedAt');
    expect((await groupJson()).spec.metadata.annotations).toBeUndefined();
  });

  it('refuses any change to an auto-registered entry, naming the field and the group', async () => {
    const before = await registrar(['get', 'we', 'web-10.0.0.20', '-n', 'shop', '-o', 'json']);
    const run = await registrar(['label', 'we', 'web-10.0.0.20', '-n', 'shop', 'team=x']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('metadata.labels.team');
    expect(run.stderr).toContain('change WorkloadGroup shop/web');
    const after = await registrar(['get', 'we', 'web-10.0.0.20', '-n', 'shop', '-o', 'json']);
    expect(after.stdout).toBe(before.stdout);
  });
});

describe('registrar patch', () => {
  it('merges a patch into the template and bumps the generation', async () => {
    const generation = (await groupJson()).metadata.generation;
    const run = await registrar([
      'patch',
      'wg',
      'web',
      '-n',
      'shop',
      '-p',
      '{"spec":{"template":{"labels":{"version":"v2"}}}}',
    ]);
    expect(run.stdout).toBe('workloadgroup.networking.istio.io/web patched\n');
    const group = await groupJson();
    expect(group.spec.template.labels).toEqual({ version: 'v2' });
    expect(group.metadata.generation).toBe(generation + 1);
  });

  it('applies a JSON patch, and says when nothing changed', async () => {
    const run = await registrar([
      'patch',
      'we',
      'db-1',
      '-n',
      'shop',
      '--type',
      'json',
      '-p',
      '[{"op":"replace","path":"/spec/address","value":"10.0.0.6"}]',
    ]);
    expect(run.code).toBe(0);
    const entry = await registrar([
      'get',
      'we',
      'db-1',
      '-n',
      'shop',
      '-o',
      'jsonpath={.spec.address}',
    ]);
    expect(entry.stdout).toBe('10.0.0.6');
    const again = await registrar([
      'patch',
      'we',
      'db-1',
      '-n',
      'shop',
      '-p',
      '{"spec":{"address":"10.0.0.6"}}',
    ]);
    expect(again.stdout).toBe('workloadentry.networking.istio.io/db-1 patched (no change)\n');
  });

  it('refuses a patch of the uid, a failed test op and an invalid address, writing nothing', async () => {
    const before = await groupJson();
    const uid = await registrar([
      'patch',
      'wg',
      'web',
      '-n',
      'shop',
      '-p',
      '{"metadata":{"uid":"x"}}',
    ]);
    expect(uid.code).not.toBe(0);
    expect(uid.stderr).toContain('metadata.uid: is set by the registrar and cannot be changed');
    const test = await registrar([
      'patch',
      'wg',
      'web',
      '-n',
      'shop',
      '--type',
      'json',
      '-p',
      '[{"op":"test","path":"/metadata/labels/tier","value":"zzz"},{"op":"remove","path":"/metadata/labels"}]',
    ]);
    expect(test.code).not.toBe(0);
    expect(test.stderr).toContain('test of /metadata/labels/tier failed');
    const invalid = await registrar([
      'patch',
      'we',
      'db-1',
      '-n',
      'shop',
      '-p',
      '{"spec":{"address":"127.0.0.1"}}',
    ]);
    expect(invalid.code).not.toBe(0);
    expect(invalid.stderr).toContain('spec.address');
    expect(await groupJson()).toEqual(before);
  });
});

describe('registrar edit', () => {
  async function editor(script: string): Promise<string> {
    const path = join(dir, `editor-${Math.random().toString(36).slice(2)}.sh`);
    await writeFile(path, `#!/bin/sh\n${script}\n`);
    await chmod(path, 0o755);
    return path;
  }

  it('writes what the editor changed', async () => {
    const sed = await editor('sed -i "s/tier: b/tier: c/" "$1"');
    const run = await registrar(['edit', 'wg', 'web', '-n', 'shop'], { EDITOR: sed });
    expect(run.stdout).toBe('workloadgroup.networking.istio.io/web edited\n');
    expect((await groupJson()).metadata.labels.tier).toBe('c');
  });

  it('changes nothing when the editor changes nothing, or fails, or touches the name', async () => {
    const before = await groupJson();
    const same = await registrar(['edit', 'wg', 'web', '-n', 'shop'], { EDITOR: 'true' });
    expect(same.stdout).toBe('workloadgroup.networking.istio.io/web edited (no change)\n');
    const failing = await registrar(['edit', 'wg', 'web', '-n', 'shop'], {
      EDITOR: await editor('sed -i "s/tier: c/tier: d/" "$1"; exit 3'),
    });
    expect(failing.code).not.toBe(0);
    expect(failing.stderr).toContain('exited with 3; nothing was written');
    const renamed = await registrar(['edit', 'wg', 'web', '-n', 'shop'], {
      KUBE_EDITOR: await editor('sed -i "s/name: web/name: web2/" "$1"'),
    });
    expect(renamed.code).not.toBe(0);
    expect(renamed.stderr).toContain('metadata.name: is set by the registrar');
    expect(await groupJson()).toEqual(before);
  });
});

describe('registrar version, uids and get', () => {
  it('prints the client release, and the registrar release once one ran on the table', async () => {
    const client = await registrar(['version', '--client']);
    expect(client.stdout).toMatch(/^Client Version: \d+\.\d+\.\d+(-dev)?\n$/);
    const none = await registrar(['version']);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('no registrar has run on it yet');
    expect((await registrar(['migrate', 'run'])).code).toBe(0);
    const both = await registrar(['version', '-o', 'json']);
    expect(both.code).toBe(0);
    const parsed = JSON.parse(both.stdout);
    expect(parsed.registrarVersion).toBe(parsed.clientVersion);
  });

  it('prints a stable uid for every entry, auto-registered ones included', async () => {
    const first = await registrar([
      'get',
      'we',
      '-n',
      'shop',
      '-o',
      'custom-columns=NAME:.metadata.name,UID:.metadata.uid',
    ]);
    const rows = first.stdout.trim().split('\n').slice(1);
    expect(rows).toHaveLength(2);
    for (const row of rows)
      expect(row).toMatch(/\s[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const again = await registrar([
      'get',
      'we',
      '-n',
      'shop',
      '-o',
      'custom-columns=NAME:.metadata.name,UID:.metadata.uid',
    ]);
    expect(again.stdout).toBe(first.stdout);
  });

  it('names every resource get takes when it does not know one', async () => {
    const run = await registrar(['get', 'foo']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      "unknown resource type 'foo'; use workloadgroups (wg) or workloadentries (we), events (ev) or agents",
    );
  });
});
