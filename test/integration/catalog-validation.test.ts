import { tmpdir } from 'node:os';
import { Readable } from 'node:stream';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.ts';
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
