import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.ts';
import { InvalidRequestError } from '../../lib/domain/errors.ts';
import { DynamoDbCatalog } from '../../lib/store/dynamodb-catalog.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * What `registrar apply` refuses, over a real table (dynalite): each refusal names the
 * document, the field and the value, and the input writes nothing, not even its valid
 * documents.
 */

const NOW = Date.parse('2026-03-01T12:00:00Z');

let dynamo: TestDynamo;

beforeAll(async () => {
  dynamo = await startTestDynamo();
});

afterAll(async () => {
  await dynamo?.close();
});

async function apply(input: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['apply', '-f', '-'], {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: Readable.from([input]),
    env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName },
    cwd: tmpdir(),
    now: () => NOW,
  });
  return { code, stdout, stderr };
}

/** Every item's key: a refused apply must leave the table exactly as it was. */
async function tableKeys(): Promise<string[]> {
  const { Items = [] } = await dynamo.client.send(new ScanCommand({ TableName: dynamo.tableName }));
  return Items.map((item) => `${item.pk} ${item.sk}`).sort();
}

const VALID_GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: fine, namespace: shop}
spec:
  template: {ports: {http: 8080}}
`;

describe('registrar apply: port names', () => {
  it('refuses a port name Istio would refuse, naming the field and the value, and writes nothing', async () => {
    const before = await tableKeys();
    const run = await apply(`${VALID_GROUP}---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec:
  template: {ports: {HTTP_Web: 8080}}
`);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      "error: document 2 (WorkloadGroup web): spec.template.ports.HTTP_Web: invalid port name: must be a DNS-1123 label (lower case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters), as Istio requires, got 'HTTP_Web'\nnothing was written\n",
    );
    expect(await tableKeys()).toEqual(before);
  });

  it('accepts DNS-1123 port names', async () => {
    const run = await apply(VALID_GROUP.replace('http: 8080', 'http-web: 8080, grpc: 9090'));
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('workloadgroup.networking.istio.io/fine created\n');
  });
});

describe('registrar apply: DynamoDB item limit', () => {
  it("refuses a group over 400 KB naming its largest field, instead of DynamoDB's bare message, and writes nothing", async () => {
    const labels = Array.from({ length: 6500 }, (_, i) => `l${i}: ${'v'.repeat(60)}`).join(', ');
    const before = await tableKeys();
    const run = await apply(`${VALID_GROUP.replace('fine', 'also-fine')}---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: huge, namespace: shop}
spec:
  template:
    labels: {${labels}}
`);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^error: document 2 \(WorkloadGroup huge\): spec\.template\.labels is 4\d\d(\.\d)? KB \(the whole WorkloadGroup 4\d\d(\.\d)? KB\); a WorkloadGroup is stored as one DynamoDB item, which must stay under 400 KB: make it smaller\nnothing was written\n$/,
    );
    expect(run.stderr).not.toContain('Item size has exceeded');
    expect(await tableKeys()).toEqual(before);
  });
});

describe('registrar apply: state only the registrar writes', () => {
  it('refuses a hand-made entry with system annotations or a Healthy condition, and writes nothing', async () => {
    const before = await tableKeys();
    const run = await apply(`${VALID_GROUP}---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: db-1
  namespace: shop
  annotations:
    istio.io/workloadController: registrar-1
    istio.io/connectedAt: "2026-03-01T11:00:00Z"
spec: {address: 10.0.0.5}
status:
  conditions:
  - {type: Healthy, status: "True", lastProbeTime: "2026-03-01T11:59:00Z"}
`);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      [
        `error: document 2 (WorkloadEntry db-1): metadata.annotations["istio.io/workloadController"]: only the registrar sets this (the control plane instance that holds a connected VM); remove the annotation to add a hand-made entry, got 'registrar-1'`,
        `error: document 2 (WorkloadEntry db-1): metadata.annotations["istio.io/connectedAt"]: only the registrar sets this (when a VM's agent connected); remove the annotation to add a hand-made entry, got '2026-03-01T11:00:00Z'`,
        `error: document 2 (WorkloadEntry db-1): status.conditions[0].type: only the registrar sets the Healthy condition (from the health reports of a connected VM's agent); remove it to add a hand-made entry, got 'Healthy'`,
        'nothing was written\n',
      ].join('\n'),
    );
    expect(await tableKeys()).toEqual(before);
  });

  it("refuses a system key in a group's spec.metadata.annotations, and writes nothing", async () => {
    const before = await tableKeys();
    const run = await apply(`apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec:
  metadata:
    annotations: {team: payments, istio.io/autoRegistrationGroup: other}
  template: {ports: {http: 8080}}
`);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `error: document 1 (WorkloadGroup web): spec.metadata.annotations["istio.io/autoRegistrationGroup"]: only the registrar sets this on the entries it creates (entries of a group are created when its VMs connect); remove the annotation from the group, got 'other'\nnothing was written\n`,
    );
    expect(await tableKeys()).toEqual(before);
  });

  it('applies a hand-made entry with its own annotations and conditions', async () => {
    const run = await apply(`apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: db-2
  namespace: shop
  annotations: {team: data}
spec: {address: 10.0.0.6}
status:
  conditions:
  - {type: Ready, status: "True"}
`);
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('workloadentry.networking.istio.io/db-2 created\n');
  });
});

describe('the catalog refuses forged registrar state before writing', () => {
  it('refuses a hand-made entry with a Healthy condition, naming the field', async () => {
    const catalog = new DynamoDbCatalog(dynamo.client, dynamo.tableName);
    const error = await catalog
      .applyEntry({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: { name: 'db-3', namespace: 'shop' },
        spec: { address: '10.0.0.7' },
        status: { conditions: [{ type: 'Healthy', status: 'True' }] },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as InvalidRequestError).field).toBe('status.conditions[0].type');
    expect((error as Error).message).toMatch(
      /^workloadentry shop\/db-3: status\.conditions\[0\]\.type: only the registrar sets the Healthy condition/,
    );
    expect(await catalog.listEntries('shop')).not.toContainEqual(
      expect.objectContaining({
        entry: expect.objectContaining({ metadata: expect.objectContaining({ name: 'db-3' }) }),
      }),
    );
  });

  it('refuses a group whose spec.metadata.annotations claim a connection', async () => {
    const catalog = new DynamoDbCatalog(dynamo.client, dynamo.tableName);
    const error = await catalog
      .applyGroup({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: { name: 'forger', namespace: 'shop' },
        spec: {
          metadata: { annotations: { 'istio.io/connectedAt': '2026-03-01T12:00:00Z' } },
          template: {},
        },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as InvalidRequestError).field).toBe(
      'spec.metadata.annotations["istio.io/connectedAt"]',
    );
    expect(await catalog.getGroup({ namespace: 'shop', name: 'forger' })).toBeUndefined();
  });
});
