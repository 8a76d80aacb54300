import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectVersion } from '../../packaging/agent-package.ts';
import { buildNpmPackage } from '../../packaging/npm-package.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { killChild } from '../fixtures/agent-unit.ts';
import { type RuntimeProcess, startRuntimeProcess } from '../fixtures/local-runtime-process.ts';

/**
 * The npm package as a user gets it: packed, installed with `npm install -g` into an empty
 * prefix (offline: it has no dependencies to fetch), and run from a directory outside the
 * checkout against `npm start`'s runtime, which it finds through REGISTRAR_DATA_DIR.
 */
const REPO = join(import.meta.dirname, '..', '..');
const VERSION = projectVersion(REPO);
// The machine's own Node.js, when it is older than 22 (Debian's or NodeSource's 18/20).
const OLD_NODE = '/usr/bin/node';
const oldNodeMajor = existsSync(OLD_NODE)
  ? Number(
      execFileSync(OLD_NODE, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }),
    )
  : undefined;

describe('the npm package, installed globally into an empty prefix', () => {
  let work: string;
  let tarball: string;
  let prefix: string;
  let elsewhere: string;
  let runtime: RuntimeProcess | undefined;
  let agent: ChildProcess | undefined;
  const bin = (name: string) => join(prefix, 'bin', name);
  const registrar = (args: string[]) =>
    spawnSync(bin('registrar'), args, {
      cwd: elsewhere,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: elsewhere, REGISTRAR_DATA_DIR: join(work, 'data') },
    });

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'npm-package-'));
    execFileSync('sh', [join(REPO, 'packaging/build-agent.sh')], {
      env: { ...process.env, OUT_DIR: join(work, 'bundle') },
      stdio: 'ignore',
    });
    tarball = await buildNpmPackage({
      root: REPO,
      agentBundle: join(work, 'bundle/registrar-agent.mjs'),
      outDir: join(work, 'out'),
      version: VERSION,
      epochSeconds: 1_700_000_000,
    });
    prefix = join(work, 'prefix');
    elsewhere = join(work, 'elsewhere');
    mkdirSync(elsewhere);
    execFileSync(
      'npm',
      ['install', '-g', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, tarball],
      { cwd: elsewhere, stdio: 'ignore' },
    );
    runtime = await startRuntimeProcess(['--data-dir', join(work, 'data')]);
  }, 120_000);

  afterAll(async () => {
    await killChild(agent);
    await runtime?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('holds the two bundles, the dashboard page and a manifest without dependencies', () => {
    const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).trim().split('\n');
    expect(
      files.filter(
        (f) =>
          !/^package\/(cli\/[\w-]+\.mjs|agent\/registrar-agent\.mjs|dist\/.+|package\.json|README\.md)$/.test(
            f,
          ),
      ),
    ).toEqual([]);
    expect(files).toContain('package/cli/registrar.mjs');
    expect(files).toContain('package/dist/index.html');
    const manifest = JSON.parse(
      execFileSync('tar', ['xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }),
    );
    expect(manifest).toMatchObject({
      name: 'workload-registrar',
      version: VERSION,
      bin: { registrar: 'cli/registrar.mjs', 'registrar-agent': 'agent/registrar-agent.mjs' },
    });
    expect(manifest.dependencies).toBeUndefined();
    expect(existsSync(join(prefix, 'lib/node_modules/workload-registrar/node_modules'))).toBe(
      false,
    );
  });

  it('answers --version from any directory, without the checkout', () => {
    const version = registrar(['--version']);
    expect(version.stdout).toBe(`registrar ${VERSION}\n`);
    const agentVersion = spawnSync(bin('registrar-agent'), ['--version'], {
      cwd: elsewhere,
      encoding: 'utf8',
    });
    expect(agentVersion.stdout).toBe(`registrar-agent ${VERSION}\n`);
  });

  it("operates npm start's registrar from outside the checkout, and its agent registers a VM", async () => {
    writeFileSync(
      join(elsewhere, 'web.yaml'),
      'apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  template:\n    ports:\n      http: 9080\n',
    );
    const applied = registrar(['apply', '-f', 'web.yaml']);
    expect(applied.stderr).toBe('');
    expect(applied.stdout).toBe('workloadgroup.networking.istio.io/web created\n');
    const token = registrar(['token', 'create', '-n', 'shop']).stdout.trim();
    expect(token).not.toBe('');
    agent = spawn(
      bin('registrar-agent'),
      [
        '--url',
        runtime?.url ?? '',
        '--group',
        'web',
        '--namespace',
        'shop',
        '--ip',
        '10.0.0.9',
        '--no-imds',
      ],
      {
        cwd: elsewhere,
        env: { PATH: process.env.PATH, REGISTRAR_AGENT_TOKEN: token },
        stdio: 'ignore',
      },
    );
    const listed = await waitFor(
      () => {
        const list = registrar(['get', 'we', '-n', 'shop', '--no-headers']).stdout;
        return list.includes('web-10.0.0.9') ? list : undefined;
      },
      'the installed agent to register',
      20_000,
    );
    expect(listed).toMatch(/^web-10\.0\.0\.9 /m);
  });

  it('loads what the CLI requires on first use from inside the bundle: yaml, the go-template engine', () => {
    const yaml = registrar(['get', 'wg', 'web', '-n', 'shop', '-o', 'yaml']);
    expect(yaml.stderr).toBe('');
    expect(yaml.stdout).toMatch(/^kind: WorkloadGroup$/m);
    const template = registrar([
      'get',
      'wg',
      '-n',
      'shop',
      '-o',
      'go-template={{range .items}}{{.metadata.name}}{{end}}',
    ]);
    expect(template.stderr).toBe('');
    expect(template.stdout).toBe('web');
  });

  it('serves the dashboard from the built page it carries (no sources, no esbuild)', async () => {
    const dashboard = spawn(bin('registrar'), ['dashboard', '--no-browser', '--port', '0'], {
      cwd: elsewhere,
      env: { PATH: process.env.PATH, HOME: elsewhere, REGISTRAR_DATA_DIR: join(work, 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let output = '';
      dashboard.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      dashboard.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const url = await waitFor(
        () => /registrar dashboard: (\S+)/.exec(output)?.[1],
        'the dashboard to print its URL',
        20_000,
      );
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('/assets/main.js');
      expect((await fetch(new URL('/assets/main.js', url))).status).toBe(200);
    } finally {
      await killChild(dashboard);
    }
  });

  it.skipIf(oldNodeMajor === undefined || oldNodeMajor >= 22)(
    'on an older Node.js, says which Node.js it needs and which one runs it',
    () => {
      for (const name of ['registrar', 'registrar-agent']) {
        const run = spawnSync(OLD_NODE, [bin(name), '--version'], { encoding: 'utf8' });
        expect(run.status, name).toBe(1);
        expect(run.stderr, name).toContain(
          `${name} needs Node.js 22 or newer; this is Node.js v${oldNodeMajor}.`,
        );
      }
    },
  );
});
