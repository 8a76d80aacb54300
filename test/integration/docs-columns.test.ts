import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSweep } from '../../lib/registration/sweep.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import {
  columnClaims,
  type DocPage,
  docPages,
  headerOf,
  outputTables,
  prose,
  splitHeader,
} from '../fixtures/doc-columns.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { DEFAULT_FAIL_STATIC } from '../fixtures/sweep-policies.ts';

/**
 * The docs say which columns each listing prints; the CLI prints them (issue 38: the README
 * described `get we -o wide` twice, with different columns, and put a refused address claim in
 * the ADDRESS column, which never held one). Every listing runs here against a registry with
 * one of everything, and each claim the pages make is compared with its header row:
 * "`get we` shows `A B C`; `-o wide` adds `D E`" in prose, and the header of every output block
 * that follows a listing command (that command run as written).
 */

const NOW = Date.parse('2026-03-01T12:00:00Z');
let dynamo: TestDynamo;
let dir: string;
let pages: DocPage[];

function registrar(args: readonly string[]) {
  return captureCli(args, {
    env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName },
    cwd: dir,
    now: () => NOW,
  });
}

/** The header row a listing prints for these arguments (the first all-caps row of stdout). */
async function printedHeader(args: readonly string[]): Promise<string[]> {
  const run = await registrar(args);
  expect(run.code, `registrar ${args.join(' ')}: ${run.stderr}`).toBe(0);
  const header = headerOf(run.stdout);
  expect(header, `registrar ${args.join(' ')} printed no header row:\n${run.stdout}`).toBeDefined();
  return splitHeader(header ?? '');
}

const GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec:
  template: {ports: {http: 9080}, serviceAccount: web}
  probe: {httpGet: {path: /healthz, port: 9080}}
`;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  dir = await mkdtemp(join(tmpdir(), 'registrar-docs-columns-'));
  const store = composeRegistry(dynamo.client, dynamo.tableName);
  expect((await captureCli(['apply', '-f', '-'], { ...cliEnv(), stdin: GROUP })).code).toBe(0);
  const change = connectChange({
    name: 'web-10.0.0.12',
    namespace: 'shop',
    connectionId: 'c-1',
    connectedAt: NOW - 60_000,
    locality: 'eu-west-1/eu-west-1a',
  });
  change.entry.spec.address = '10.0.0.12';
  expect(await store.connect(change)).toBe('created');
  // A sweeper run with fail static, as the registrar's (sweep status then has its cells), an
  // event (cordon), a token and a policy: every listing has a row, so it prints a header.
  await runSweep(store, {
    now: NOW,
    policy: { gracePeriodMs: 300_000, maxConnectionAgeMs: 7_200_000 },
    maxDeletes: 10,
    deletesPerSecond: 50,
    failStatic: DEFAULT_FAIL_STATIC,
  });
  for (const args of [
    ['cordon', 'we', 'web-10.0.0.12', '-n', 'shop'],
    ['token', 'create', '-n', 'shop', '--service-account', 'web'],
    ['policy', 'allow', '--role-arn', 'arn:aws:iam::123456789012:role/web-vm', '-n', 'shop'],
  ]) {
    const run = await registrar(args);
    expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
  }
  pages = docPages();
});

function cliEnv() {
  return {
    env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName },
    cwd: dir,
    now: () => NOW,
  };
}

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  await dynamo?.close();
});

describe('the columns the docs describe are the columns the CLI prints', () => {
  it('in prose: "`LISTING` shows `COLUMNS`" and "`-o wide` adds `COLUMNS`"', async () => {
    const claims = pages.flatMap(columnClaims);
    // README describes get we, get wg and get events this way; the extraction found them.
    for (const listing of ['get we', 'get wg', 'get events']) {
      expect(claims.map((claim) => claim.listing)).toContain(listing);
    }
    const problems: string[] = [];
    for (const claim of claims) {
      const args = [...claim.listing.split(' '), '-n', 'shop'];
      const table = await printedHeader(args);
      const said = claim.columns.join(' ');
      if (claim.wide) {
        const wide = await printedHeader([...args, '-o', 'wide']);
        // What wide adds, wherever it puts it (get events puts SOURCE before MESSAGE, as kubectl).
        const added = wide.filter((column) => !table.includes(column)).join(' ');
        if (said !== added) {
          problems.push(
            `${claim.where}: \`${claim.listing} -o wide\` adds \`${added}\`, not \`${said}\``,
          );
        }
      } else if (said !== table.join(' ')) {
        problems.push(
          `${claim.where}: \`${claim.listing}\` shows \`${table.join(' ')}\`, not \`${said}\``,
        );
      }
    }
    expect(problems).toEqual([]);
  });

  it("in output blocks: each table's header is what its command prints", async () => {
    const tables = pages.flatMap(outputTables);
    // The quick start's get we, agent.md's get we -o wide, operations.md's get agents,
    // get events and sweep status at least.
    expect(tables.length).toBeGreaterThanOrEqual(6);
    const problems: string[] = [];
    for (const table of tables) {
      const printed = await printedHeader(table.args);
      if (printed.join(' ') !== table.columns.join(' ')) {
        problems.push(
          `${table.where}: 'registrar ${table.args.join(' ')}' prints ${printed.join(' ')}, the page shows ${table.columns.join(' ')}`,
        );
      }
    }
    expect(problems).toEqual([]);
  });

  it('a refused address claim is an event of the holder, never a cell of its ADDRESS column', () => {
    // README once said both; get we prints spec.address alone (cli/commands/resources.ts).
    // Within one clause: "ADDRESS adds the latest refused claim", "the ADDRESS column ... names
    // the claim"; not a header list followed by "(a refused claim ... is an event)".
    const problems = pages.flatMap(({ page, text }) => {
      const body = prose(text);
      return [...body.matchAll(/ADDRESS`?(?: column)?[^.;(]{0,60}\bclaim/g)].map(
        (match) => `${page}:${body.slice(0, match.index).split('\n').length}: ${match[0]}`,
      );
    });
    expect(problems).toEqual([]);
  });
});
