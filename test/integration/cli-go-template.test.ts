import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/main.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * kubectl's `-o go-template=` and `-o go-template-file=` wherever `-o jsonpath=` is taken
 * (issue 26): `get` (a List, or one object when one is named, and each change under
 * `--watch`), `token list`, `policy list` and `sweep status`. runCli in-process against
 * dynalite; the start-up check runs the real CLI's process.
 */

const NOW = Date.parse('2026-03-01T12:00:00Z');
let dynamo: TestDynamo;
let dir: string;

const env = () => ({
  REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
  REGISTRAR_TABLE: dynamo.tableName,
});

function registrar(args: string[], stdin = '') {
  return captureCli(args, { env: env(), cwd: dir, stdin, now: () => NOW });
}

const GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec:
  metadata: {labels: {app: web}}
  template: {ports: {http: 8080}}
`;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  dir = await mkdtemp(join(tmpdir(), 'registrar-go-template-'));
  const store = composeRegistry(dynamo.client, dynamo.tableName);
  expect((await registrar(['apply', '-f', '-'], GROUP)).code).toBe(0);
  for (const address of ['10.3.0.1', '10.3.0.2']) {
    const change = connectChange({
      name: `web-${address}`,
      namespace: 'shop',
      connectionId: `c-${address}`,
      connectedAt: NOW - 60_000,
    });
    change.autoRegistrationGroup = 'web';
    change.entry.spec.address = address;
    change.entry.metadata.labels = { app: 'web' };
    expect(await store.connect(change)).toBe('created');
  }
  for (const args of [
    ['-n', 'shop', '--service-account', 'web'],
    ['-n', 'blog'],
  ]) {
    expect((await registrar(['token', 'create', ...args])).code).toBe(0);
  }
  const role = 'arn:aws:iam::123456789012:role/shop-vm';
  expect((await registrar(['policy', 'allow', '--role-arn', role, '-n', 'shop'])).code).toBe(0);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await dynamo?.close();
});

describe('get -o go-template', () => {
  it('runs the template once over the List', async () => {
    const run = await registrar([
      'get',
      'we',
      '-n',
      'shop',
      '-o',
      'go-template={{.kind}}:{{range .items}} {{.metadata.name}}={{.spec.address}}{{end}}',
    ]);
    expect(run).toEqual({
      code: 0,
      stdout: 'List: web-10.3.0.1=10.3.0.1 web-10.3.0.2=10.3.0.2',
      stderr: '',
    });
  });

  it("runs the README's example, a label an entry lacks printing <no value>", async () => {
    const entry = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: no-labels, namespace: shop}
spec: {address: 10.3.0.8}
`;
    expect((await registrar(['apply', '-f', '-'], entry)).code).toBe(0);
    try {
      const template =
        '{{range .items}}{{.metadata.name}} {{.metadata.labels.app}}{{"\\n"}}{{end}}';
      const run = await registrar(['get', 'we', '-n', 'shop', '-o', `go-template=${template}`]);
      expect(run.stdout).toBe('no-labels <no value>\nweb-10.3.0.1 web\nweb-10.3.0.2 web\n');
    } finally {
      expect((await registrar(['delete', 'we', 'no-labels', '-n', 'shop'])).code).toBe(0);
    }
  });

  it('runs it over the one object a name asks for, not a List, as kubectl', async () => {
    const template = '{{.kind}} {{.metadata.name}} {{index .metadata.labels "app"}}';
    const run = await registrar([
      'get',
      'we',
      'web-10.3.0.2',
      '-n',
      'shop',
      '-o',
      `go-template=${template}`,
    ]);
    expect(run.stdout).toBe('WorkloadEntry web-10.3.0.2 web');
    const split = await registrar(['get', 'wg/web', '-n', 'shop', `-o=go-template={{.kind}}`]);
    expect(split.stdout).toBe('WorkloadGroup');
    // kubectl's other name for it.
    const alias = await registrar(['get', 'wg/web', '-n', 'shop', '-o', 'template={{.kind}}']);
    expect(alias.stdout).toBe('WorkloadGroup');
  });

  it('prints an empty List through the template, where a table would say No resources found', async () => {
    const run = await registrar(['get', 'we', '-n', 'nowhere', '-o', 'go-template={{len .items}}']);
    expect(run).toEqual({ code: 0, stdout: '0', stderr: '' });
  });

  it('refuses a template that does not parse as a usage error naming line and column (exit 2)', async () => {
    const run = await registrar([
      'get',
      'we',
      '-n',
      'shop',
      '-o',
      'go-template={{range .items}}\n{{.x}',
    ]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      "invalid go-template: template: output:2:5: bad character U+007D '}'",
    );
    const empty = await registrar(['get', 'we', '-o', 'go-template']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('go-template needs a template');
  });

  it('fails a template that fails while running (exit 1), naming where, printing nothing', async () => {
    const run = await registrar([
      'get',
      'we',
      '-n',
      'shop',
      '-o',
      'go-template={{range .items}}{{.spec.address.x}}{{end}}',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'error: error executing template: template: output:1:19: executing "output" at <.spec.address.x>: ' +
        "can't evaluate field x in type string\n",
    );
  });

  it('prints each change under --watch through the template, one object at a time', async () => {
    const stop = new AbortController();
    let stdout = '';
    const done = runCli(
      [
        'get',
        'we',
        '-n',
        'shop',
        '-w',
        '--watch-interval',
        '100ms',
        '-o',
        'go-template={{.metadata.name}}{{"\\n"}}',
      ],
      {
        stdout: { write: (text: string) => (stdout += text) },
        stderr: { write: () => true },
        stdin: Readable.from(['']),
        env: env(),
        cwd: dir,
        signal: stop.signal,
      },
    );
    try {
      await waitFor(() => stdout.split('\n').length > 2, 'the current entries');
      expect(stdout).toBe('web-10.3.0.1\nweb-10.3.0.2\n');
      const entry = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: by-hand, namespace: shop}
spec: {address: 10.3.0.9}
`;
      expect((await registrar(['apply', '-f', '-'], entry)).code).toBe(0);
      await waitFor(() => stdout.includes('by-hand'), 'the new entry');
      expect(stdout).toBe('web-10.3.0.1\nweb-10.3.0.2\nby-hand\n');
    } finally {
      stop.abort('SIGINT');
    }
    expect(await done).toBe(130);
    expect((await registrar(['delete', 'we', 'by-hand', '-n', 'shop'])).code).toBe(0);
  });
});

describe('token list and policy list -o go-template', () => {
  it('reads the template from a file with go-template-file', async () => {
    const file = join(dir, 'tokens.tmpl');
    await writeFile(
      file,
      '{{range .items}}{{.namespace}}\t{{with .serviceAccount}}{{.}}{{else}}<any>{{end}}\t{{.status}}\n{{end}}',
    );
    const run = await registrar(['token', 'list', '-A', '-o', `go-template-file=${file}`]);
    expect(run.code).toBe(0);
    // One line per token, in the order -o json lists them.
    const listed = JSON.parse((await registrar(['token', 'list', '-A', '-o', 'json'])).stdout);
    expect(listed.items.map((token: { namespace: string }) => token.namespace).sort()).toEqual([
      'blog',
      'shop',
    ]);
    const lines = listed.items.map(
      (token: { namespace: string; serviceAccount?: string }) =>
        `${token.namespace}\t${token.serviceAccount ?? '<any>'}\tactive\n`,
    );
    expect(run.stdout).toBe(lines.join(''));
    const alias = await registrar(['token', 'list', '-A', '-o', `templatefile=${file}`]);
    expect(alias.stdout).toBe(run.stdout);
  });

  it('refuses a file it cannot read, and names the file of a broken template (exit 2)', async () => {
    const missing = await registrar([
      'token',
      'list',
      '-o',
      `go-template-file=${join(dir, 'nope')}`,
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`cannot read go-template-file ${join(dir, 'nope')}: ENOENT`);
    const broken = join(dir, 'broken.tmpl');
    await writeFile(broken, '{{range .items}}\n{{.id}}\n');
    const run = await registrar(['token', 'list', '-o', `go-template-file=${broken}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `invalid go-template in ${broken}: template: output:3:1: unexpected EOF`,
    );
  });

  it('policy list takes -o go-template as token list does', async () => {
    const run = await registrar([
      'policy',
      'list',
      '-n',
      'shop',
      '-o',
      'go-template={{range .items}}{{.namespace}}{{end}}',
    ]);
    expect(run.stdout).toBe('shop');
  });
});

describe('sweep status -o go-template', () => {
  it('prints the status object through the template, the same fields -o json shows', async () => {
    const json = JSON.parse((await registrar(['sweep', 'status', '-o', 'json'])).stdout);
    const run = await registrar([
      'sweep',
      'status',
      '-o',
      'go-template={{.mode}} {{len .cells}} {{.away}}',
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${json.mode} ${json.cells.length} ${json.away}`);
    expect(json.mode).toBe('normal');
  });

  it('lists go-template among its formats', async () => {
    const run = await registrar(['sweep', 'status', '-o', 'custom-columns=A:.mode']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'supported formats: json, yaml, jsonpath=TEMPLATE, go-template=TEMPLATE|go-template-file=FILE',
    );
  });
});

describe('start-up', () => {
  const bin = new URL('../../bin/registrar.js', import.meta.url).pathname;
  const hook = new URL('../fixtures/loaded-modules-hook.ts', import.meta.url).pathname;

  /** The project files under cli/go-template/ that `registrar <args>` loaded. */
  async function engineModules(args: string[]): Promise<string[]> {
    const result = await promisify(execFile)(process.execPath, ['--import', hook, bin, ...args], {
      env: { ...process.env, ...env() },
    }).catch((error: { stdout: string; stderr: string }) => error);
    const urls = result.stderr.split('loaded-modules:\n')[1]?.split('\n') ?? [];
    expect(urls.length).toBeGreaterThan(3);
    return urls.filter((url) => url.includes('/cli/go-template/'));
  }

  it('loads the template engine only when -o go-template asks for it', async () => {
    expect(await engineModules(['get', 'we', '-n', 'shop', '-o', 'name'])).toEqual([]);
    const loaded = await engineModules(['get', 'we', '-n', 'shop', '-o', 'go-template={{.kind}}']);
    expect(loaded.some((url) => url.endsWith('/cli/go-template/template.ts'))).toBe(true);
  });
});
