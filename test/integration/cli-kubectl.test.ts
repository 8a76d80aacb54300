import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runCli } from '../../cli/main.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * kubectl's conventions in `registrar`: output formats, label selectors, TYPE/NAME, delete's
 * flags, --version. runCli in-process against a real table (dynalite) with a fixed clock.
 */

const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;

const GROUP_AND_ENTRY = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec:
  metadata: {labels: {app: web, tier: front}}
  template: {ports: {http: 8080}, serviceAccount: web, network: vpc-1}
  probe: {httpGet: {path: /ready, port: 8080}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: db-1, namespace: shop, labels: {app: db}}
spec: {address: 10.0.0.5}
`;

const execFileAsync = promisify(execFile);

let dynamo: TestDynamo;
let store: RegistrarStore;
let dir: string;

async function registrar(args: string[], stdin = '') {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: Readable.from([stdin]),
    env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName },
    cwd: dir,
    now: () => NOW,
  });
  return { code, stdout, stderr };
}

/** An entry as a VM's connect leaves it: network and locality from the agent, its identity. */
async function registerVm(
  name: string,
  address: string,
  labels: Record<string, string>,
  agentVersion?: string,
) {
  const outcome = await store.connect({
    ...(agentVersion === undefined ? {} : { agentVersion }),
    entry: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name, namespace: 'shop', labels, creationTimestamp: new Date(NOW).toISOString() },
      spec: { address, labels, network: 'vpc-1', locality: 'eu-west-1/eu-west-1a' },
    },
    autoRegistrationGroup: 'web',
    origin: 'test-origin',
    mayCreate: true,
    recordConnection: false,
    healthChecksEnabled: true,
    groupGeneration: 1,
    connectionId: `conn-${name}`,
    connectedAt: NOW,
    controller: 'workload-registrar',
    identity: { principal: 'token:abc123', namespace: 'shop', serviceAccount: 'web' },
  });
  expect(outcome).toBe('created');
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName);
  dir = await mkdtemp(join(tmpdir(), 'registrar-kubectl-'));
  expect((await registrar(['apply', '-f', '-'], GROUP_AND_ENTRY)).code).toBe(0);
  await registerVm('web-10.0.0.12', '10.0.0.12', { app: 'web', tier: 'front' }, '0.2.0');
  await registerVm('web-10.0.0.13', '10.0.0.13', { app: 'web', tier: 'canary' });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await dynamo?.close();
});

describe('get columns', () => {
  it('shows the GROUP of auto-registered entries and <none> for hand-made ones', async () => {
    const run = await registrar(['get', 'we', '-n', 'shop']);
    expect(run.stdout.split('\n')[0]).toMatch(
      /^NAME\s+ADDRESS\s+CONNECTED\s+HEALTHY\s+ROUTABLE\s+GROUP\s+AGE$/,
    );
    expect(run.stdout).toMatch(
      /^web-10\.0\.0\.12\s+10\.0\.0\.12\s+True\s+<none>\s+False\s+web\s+0s$/m,
    );
    expect(run.stdout).toMatch(/^db-1\s+10\.0\.0\.5\s+<none>\s+<none>\s+True\s+<none>\s+0s$/m);
  });

  it('adds NETWORK LOCALITY IDENTITY AGENT with -o wide', async () => {
    const run = await registrar(['get', 'we', '-n', 'shop', '-o', 'wide']);
    expect(run.stdout.split('\n')[0]).toMatch(
      /^NAME\s+ADDRESS\s+CONNECTED\s+HEALTHY\s+ROUTABLE\s+GROUP\s+AGE\s+NETWORK\s+LOCALITY\s+IDENTITY\s+AGENT$/,
    );
    expect(run.stdout).toMatch(
      /^web-10\.0\.0\.12\s+10\.0\.0\.12\s+True\s+<none>\s+False\s+web\s+0s\s+vpc-1\s+eu-west-1\/eu-west-1a\s+token:abc123\s+0\.2\.0$/m,
    );
    // Connected through a registrar that recorded no version: unknown, not made up.
    expect(run.stdout).toMatch(/^web-10\.0\.0\.13\s+.*\s+token:abc123\s+<unknown>$/m);
    expect(run.stdout).toMatch(/^db-1\s+.*\s+<none>\s+<none>\s+<none>\s+<none>$/m);
  });

  it('counts the entries of each namespace by agent version with get agents', async () => {
    const table = await registrar(['get', 'agents', '-n', 'shop']);
    expect(table).toEqual({
      code: 0,
      stdout:
        'AGENT       ENTRIES   CONNECTED\n' +
        '0.2.0       1         1\n' +
        '<unknown>   1         1\n',
      stderr: '',
    });
    const all = await registrar(['get', 'agents', '-A', '-o', 'json']);
    expect(JSON.parse(all.stdout)).toEqual({
      items: [
        { namespace: 'shop', agentVersion: '0.2.0', entries: 1, connected: 1 },
        { namespace: 'shop', agentVersion: '<unknown>', entries: 1, connected: 1 },
      ],
    });
    const none = await registrar(['get', 'agents', '-n', 'empty']);
    expect(none).toEqual({ code: 0, stdout: '', stderr: 'No agents found in empty namespace.\n' });
  });

  // Its two entries were written without the template's service account: not UP-TO-DATE.
  it('shows a group with -o wide: its service account, network and probe', async () => {
    const run = await registrar(['get', 'wg', '-n', 'shop', '-o', 'wide']);
    expect(run.stdout).toBe(
      'NAME   GENERATION   ENTRIES   UP-TO-DATE   AGE   SERVICE-ACCOUNT   NETWORK   PROBE\n' +
        'web    1            2         0            0s    web               vpc-1     httpGet\n',
    );
  });
});

describe('get output formats', () => {
  it('prints TYPE/NAME lines with -o name', async () => {
    const run = await registrar(['get', 'we', '-n', 'shop', '-o', 'name']);
    expect(run.stdout).toBe(
      'workloadentry.networking.istio.io/db-1\n' +
        'workloadentry.networking.istio.io/web-10.0.0.12\n' +
        'workloadentry.networking.istio.io/web-10.0.0.13\n',
    );
  });

  it('reads -o=json and -n=shop as kubectl does', async () => {
    const spaced = await registrar(['get', 'we', '-n', 'shop', '-o', 'json']);
    const joined = await registrar(['get', 'we', '-n=shop', '-o=json']);
    expect(joined.code).toBe(0);
    expect(joined.stdout).toBe(spaced.stdout);
    expect(JSON.parse(joined.stdout).items).toHaveLength(3);
  });

  it('prints a JSONPath template over the list', async () => {
    const names = await registrar([
      'get',
      'we',
      '-n',
      'shop',
      '-o',
      'jsonpath={.items[*].metadata.name}',
    ]);
    expect(names).toEqual({ code: 0, stdout: 'db-1 web-10.0.0.12 web-10.0.0.13', stderr: '' });

    const template =
      'jsonpath={range .items[?(@.metadata.annotations.istio\\.io/autoRegistrationGroup=="web")]}{.metadata.name}{"\\t"}{.spec.address}{"\\n"}{end}';
    const rows = await registrar(['get', 'we', '-n', 'shop', '-o', template]);
    expect(rows.stdout).toBe('web-10.0.0.12\t10.0.0.12\nweb-10.0.0.13\t10.0.0.13\n');
  });

  it('prints a JSONPath template over one object when it is named', async () => {
    const run = await registrar(['get', 'we', 'db-1', '-n', 'shop', '-o=jsonpath={.spec.address}']);
    expect(run.stdout).toBe('10.0.0.5');
  });

  it('refuses a broken template or an unknown format as a usage error naming it', async () => {
    const broken = await registrar(['get', 'we', '-o', 'jsonpath={.items[*]']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('invalid jsonpath template: unclosed action');
    const unknown = await registrar(['get', 'we', '-o', 'jsonpath-as-json={.items}']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      'supported formats: wide, name, json, yaml, jsonpath=TEMPLATE, go-template=TEMPLATE|go-template-file=FILE, custom-columns=NAME:.metadata.name,...|custom-columns-file=FILE',
    );
  });
});

describe('get -l/--selector', () => {
  const names = async (selector: string) => {
    const run = await registrar(['get', 'we', '-n', 'shop', '-l', selector, '-o', 'name']);
    expect(run.code).toBe(0);
    return run.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('/')[1]);
  };

  it('selects by equality, inequality, existence and absence, all joined by commas', async () => {
    expect(await names('app=web')).toEqual(['web-10.0.0.12', 'web-10.0.0.13']);
    expect(await names('app==web,tier=front')).toEqual(['web-10.0.0.12']);
    expect(await names('app!=web')).toEqual(['db-1']);
    expect(await names('tier')).toEqual(['web-10.0.0.12', 'web-10.0.0.13']);
    expect(await names('!tier')).toEqual(['db-1']);
    expect(await names('app=web,tier!=canary')).toEqual(['web-10.0.0.12']);
  });

  it('says no resources were found when nothing matches', async () => {
    const run = await registrar(['get', 'we', '-n', 'shop', '--selector', 'app=cart']);
    expect(run).toEqual({ code: 0, stdout: '', stderr: 'No resources found in shop namespace.\n' });
  });

  it('refuses set-based and malformed selectors with what is supported', async () => {
    for (const selector of [
      'app in (web,db)',
      'tier notin (canary)',
      'app>1',
      'app=web,,tier',
      'app=no spaces',
    ]) {
      const run = await registrar(['get', 'we', '-n', 'shop', '-l', selector]);
      expect(run.code, selector).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr, selector).toMatch(/supported: key=value|invalid label value/);
    }
  });
});

describe('TYPE/NAME', () => {
  it('gets one object as we/NAME, as kubectl prints a single object', async () => {
    const run = await registrar(['get', 'we/web-10.0.0.12', '-n', 'shop', '-o', 'json']);
    expect(JSON.parse(run.stdout)).toMatchObject({
      kind: 'WorkloadEntry',
      metadata: { name: 'web-10.0.0.12' },
    });
  });

  it('gets objects of two types, one table each with TYPE/NAME names', async () => {
    const run = await registrar(['get', 'wg/web', 'workloadentry/db-1', '-n', 'shop']);
    expect(run.code).toBe(0);
    const [groups, entries] = run.stdout.split('\n\n');
    expect(groups).toMatch(
      /^NAME\s+GENERATION\s+ENTRIES\s+UP-TO-DATE\s+AGE\nworkloadgroup\.networking\.istio\.io\/web\s+1\s+2\s+0\s+0s$/,
    );
    expect(entries).toMatch(
      /^NAME\s+ADDRESS\s.*\nworkloadentry\.networking\.istio\.io\/db-1\s+10\.0\.0\.5\s/,
    );
  });

  it('describes we/NAME', async () => {
    const run = await registrar(['describe', 'we/web-10.0.0.12', '-n', 'shop']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Name:\s+web-10\.0\.0\.12$/m);
  });

  it('prints the objects found and an error line for each missing one, exit 1', async () => {
    const run = await registrar(['get', 'we/db-1', 'we/db-404', '-n', 'shop', '-o', 'name']);
    expect(run).toEqual({
      code: 1,
      stdout: 'workloadentry.networking.istio.io/db-1\n',
      stderr: 'error: workloadentries "db-404" not found in namespace "shop"\n',
    });
  });

  it('refuses a type given both separately and in TYPE/NAME form', async () => {
    const run = await registrar(['get', 'we', 'we/db-1', '-n', 'shop']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'there is no need to specify a resource type as a separate argument',
    );
  });
});

describe('delete', () => {
  it('--ignore-not-found makes a missing object no error, and still deletes the others', async () => {
    await registrar(
      ['apply', '-f', '-'],
      GROUP_AND_ENTRY.split('---\n')[1]?.replace('db-1', 'db-7') ?? '',
    );
    const run = await registrar([
      'delete',
      'we',
      'db-404',
      'db-7',
      '-n',
      'shop',
      '--ignore-not-found',
    ]);
    expect(run).toEqual({
      code: 0,
      stdout: 'workloadentry.networking.istio.io "db-7" deleted\n',
      stderr: '',
    });
    const without = await registrar(['delete', 'we/db-404', '-n', 'shop']);
    expect(without).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: workloadentries "db-404" not found in namespace "shop"\n',
    });
  });

  it('-f deletes what a file names, the group taking its entries along', async () => {
    const file = join(dir, 'cart.yaml');
    const cart = GROUP_AND_ENTRY.replaceAll('web', 'cart')
      .replaceAll('db-1', 'cart-db')
      .replaceAll('shop', 'orders');
    await writeFile(file, cart);
    expect((await registrar(['apply', '-f', 'cart.yaml'])).code).toBe(0);

    const run = await registrar(['delete', '-f', 'cart.yaml']);

    expect(run).toEqual({
      code: 0,
      stdout:
        'workloadgroup.networking.istio.io "cart" deleted\nworkloadentry.networking.istio.io "cart-db" deleted\n',
      stderr: '',
    });
    expect((await registrar(['get', 'we', '-n', 'orders'])).stderr).toBe(
      'No resources found in orders namespace.\n',
    );
    const again = await registrar(['delete', '-f', 'cart.yaml']);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      'error: workloadgroups "cart" not found in namespace "orders"\nerror: workloadentries "cart-db" not found in namespace "orders"\n',
    );
    expect((await registrar(['delete', '-f', 'cart.yaml', '--ignore-not-found'])).code).toBe(0);
  });

  it('-f reads what get -o yaml printed (a List) from stdin', async () => {
    await registrar(
      ['apply', '-f', '-'],
      GROUP_AND_ENTRY.split('---\n')[1]?.replace('db-1', 'db-8') ?? '',
    );
    const listed = await registrar(['get', 'we/db-8', '-n', 'shop', '-o', 'yaml']);
    const run = await registrar(['delete', '-f', '-'], listed.stdout);
    expect(run.stdout).toBe('workloadentry.networking.istio.io "db-8" deleted\n');
  });

  it('-f checks every document before deleting anything', async () => {
    const input = `kind: WorkloadEntry
metadata: {name: db-1, namespace: shop}
---
kind: Service
metadata: {name: web}
`;
    const run = await registrar(['delete', '-f', '-'], input);
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "error: document 2: kind: must be WorkloadGroup or WorkloadEntry, got 'Service'\nnothing was deleted\n",
    });
    expect((await registrar(['get', 'we', 'db-1', '-n', 'shop'])).code).toBe(0);
  });
});

describe('-f paths', () => {
  it.each([['apply'], ['delete']])(
    '%s -f names a missing file in one line, exit 2',
    async (verb) => {
      const run = await registrar([verb, '-f', 'missing/web.yaml']);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(
        'error: the path "missing/web.yaml" does not exist\n(add --help for usage)\n',
      );
    },
  );

  it('refuses a file that is not UTF-8, naming it and the byte, and writes nothing', async () => {
    // Latin-1 "café": 0xE9 alone is no UTF-8 sequence; read as UTF-8 it was stored as "caf\uFFFD".
    const latin1 = Buffer.concat([
      Buffer.from(GROUP_AND_ENTRY.replace('db-1', 'db-latin1').replace('{app: db}', '{app: caf')),
      Buffer.from([0xe9]),
      Buffer.from('}'),
    ]);
    const offset = latin1.indexOf(0xe9);
    await writeFile(join(dir, 'latin1.yaml'), latin1);
    const run = await registrar(['apply', '-f', 'latin1.yaml']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `error: "latin1.yaml" is not UTF-8: byte ${offset} (0xe9) starts no valid UTF-8 sequence; save the file as UTF-8\n(add --help for usage)\n`,
    );
    expect((await registrar(['get', 'we', 'db-latin1', '-n', 'shop'])).code).not.toBe(0);
  });

  it('applies every .yaml, .yml and .json file of a directory, in name order', async () => {
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(
      join(manifests, 'b.yml'),
      GROUP_AND_ENTRY.split('---\n')[1]?.replace('db-1', 'db-b') ?? '',
    );
    await writeFile(
      join(manifests, 'a.yaml'),
      GROUP_AND_ENTRY.split('---\n')[1]?.replace('db-1', 'db-a') ?? '',
    );
    await writeFile(join(manifests, 'notes.txt'), 'not a manifest');
    const run = await registrar(['apply', '-f', 'manifests']);
    expect(run.stdout).toBe(
      'workloadentry.networking.istio.io/db-a created\nworkloadentry.networking.istio.io/db-b created\n',
    );
    expect((await registrar(['delete', '-f', 'manifests'])).code).toBe(0);
  });
});

describe('token and policy', () => {
  it('token create without -n makes a token for the default namespace, as its help says', async () => {
    const help = await registrar(['token', 'create', '--help']);
    expect(help.stdout).toMatch(/-n, --namespace <namespace>\s+namespace \(default "default"\)/);
    const created = await registrar(['token', 'create', '--ttl', '7d']);
    expect(created.code).toBe(0);
    const id = created.stdout.split('.')[1];
    const list = JSON.parse((await registrar(['token', 'list', '-o', 'json'])).stdout);
    expect(list.items.find((token: { id: string }) => token.id === id)).toEqual({
      id,
      namespace: 'default',
      createdAt: '2026-03-01T12:00:00Z',
      expiresAt: new Date(NOW + 7 * DAY).toISOString().replace('.000Z', 'Z'),
      status: 'active',
    });
  });

  it('token list -o yaml shows what the table shows and never a secret or its hash', async () => {
    const created = await registrar(['token', 'create', '-n', 'shop', '--service-account', 'web']);
    const [, id, secret] = created.stdout.trim().split('.');
    const run = await registrar(['token', 'list', '-n', 'shop', '-o', 'yaml']);
    const list = parse(run.stdout);
    expect(list.kind).toBe('List');
    expect(list.items).toContainEqual(
      expect.objectContaining({ id, namespace: 'shop', serviceAccount: 'web' }),
    );
    expect(run.stdout).not.toContain(secret);
    expect(run.stdout).not.toMatch(/hash/i);
  });

  it('lists every unit of --ttl when refusing one', async () => {
    const run = await registrar(['token', 'create', '-n', 'shop', '--ttl', '2w']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      "argument '2w' is invalid. must be a positive duration with a unit, ms, s, m, h or d",
    );
  });

  it('policy allow without -n allows the default namespace; policy list -o json shows it', async () => {
    const role = 'arn:aws:iam::123456789012:role/web-vm';
    expect((await registrar(['policy', 'allow', '--role-arn', role])).stdout).toBe(
      `role ${role} may register in namespace "default"\n`,
    );
    const list = JSON.parse((await registrar(['policy', 'list', '-o', 'json'])).stdout);
    expect(list.items).toEqual([
      { roleArn: role, namespace: 'default', createdAt: '2026-03-01T12:00:00Z' },
    ]);
    expect((await registrar(['policy', 'revoke', '--role-arn', role])).code).toBe(0);
  });
});

describe('--version', () => {
  it("prints the project's version and exits 0", async () => {
    const { version } = JSON.parse(
      await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
    );
    expect(await registrar(['--version'])).toEqual({
      code: 0,
      stdout: `registrar ${version}\n`,
      stderr: '',
    });
  });

  it('the bin script answers --version alike without loading the CLI', async () => {
    const { version } = JSON.parse(
      await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
    );
    const bin = fileURLToPath(new URL('../../bin/registrar.js', import.meta.url));
    const { stdout } = await execFileAsync(process.execPath, [bin, '--version']);
    expect(stdout).toBe(`registrar ${version}\n`);
  });
});
