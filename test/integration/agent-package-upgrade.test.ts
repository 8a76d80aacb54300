import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDeb } from '../../packaging/deb-package.ts';
import { packageInputs, stubStockDebian } from '../fixtures/agent-package-build.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, entryName, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { testBackend } from '../fixtures/dynamo.ts';
import { currentVersion, preparePreviousRelease } from '../fixtures/previous-release.ts';
import { previousReleaseSkip } from '../fixtures/release-fleet.ts';
import { type ScratchRoot, scratchRoot } from '../fixtures/scratch-dpkg-root.ts';

/**
 * A VM running the previous release's agent (CHANGELOG.md: 0.2.0, an `Architecture: all` .deb
 * whose unit runs the bundle with the distribution's Node.js 22) is upgraded to this release's
 * amd64 .deb, the executable that needs no Node.js, as `apt install ./<new>.deb` would: dpkg
 * installs both into a scratch root (the maintainer scripts run; systemd is the stand-in that
 * starts the installed unit's ExecStart), and the previous package is built by its own release's
 * code from its commit (test/fixtures/previous-release.ts). The agent that was running drains,
 * the executable registers the VM again, the same entry, and the operator's agent.yaml stays
 * (dpkg asks about it: the shipped one changed; an unattended upgrade passes --force-confold).
 */
const hasCommand = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
const canInstall = process.getuid?.() === 0 && hasCommand('dpkg-deb');
const IP = '10.0.42.1';
const ENTRY = entryName('web', IP);

describe.skipIf(
  testBackend() === 'dynamodb-local' ||
    !(canInstall || process.env.CI === 'true') ||
    previousReleaseSkip() !== undefined,
)("from the previous release's .deb to this release's executable", () => {
  let work: string;
  let root: ScratchRoot;
  let bed: AgentTestbed;
  let previousVersion: string;
  let oldDeb: string;
  let newDeb: string;
  const agentPid = () => {
    const file = join(root.dir, 'run/registrar-agent.pid');
    return existsSync(file) ? Number(readFileSync(file, 'utf8')) : undefined;
  };
  const alive = (pid: number | undefined) => {
    if (pid === undefined) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const connected = async () => {
    const found = await bed.entry(ENTRY);
    return found?.connected ? found : undefined;
  };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'agent-upgrade-'));
    const { release, dir } = await preparePreviousRelease();
    previousVersion = release.version;
    // The previous release's own packaging code, in its own tree, as its release built it.
    const script = [
      "import { execFileSync } from 'node:child_process';",
      "const { readAgentFiles } = await import('./packaging/agent-files.ts');",
      "const { buildDeb } = await import('./packaging/deb-package.ts');",
      "execFileSync('sh', ['packaging/build-agent.sh'], { env: { ...process.env, OUT_DIR: process.env.BUNDLE_DIR }, stdio: 'ignore' });",
      'const deb = buildDeb({ root: process.cwd(), bundleDir: process.env.BUNDLE_DIR, outDir: process.env.OUT_DIR, version: process.env.VERSION, paths: readAgentFiles(process.cwd()), epochSeconds: 1700000000 });',
      'process.stdout.write(deb);',
    ].join('\n');
    oldDeb = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: dir,
      encoding: 'utf8',
      env: {
        ...process.env,
        BUNDLE_DIR: join(work, 'old-bundle'),
        OUT_DIR: join(work, 'old'),
        VERSION: release.version,
      },
    }).trim();
    const inputs = await packageInputs(work);
    newDeb = buildDeb(
      inputs.build('x86_64', { version: currentVersion(), outDir: join(work, 'new') }),
    );
    root = scratchRoot(join(work, 'root'));
    bed = await startAgentTestbed();
    await bed.applyGroup('web');
  }, 300_000);

  afterAll(async () => {
    const pid = agentPid();
    if (alive(pid)) process.kill(pid as number, 'SIGKILL');
    await bed?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the previous release installs with a Node.js 22 package, and its agent registers the VM', async () => {
    expect(execFileSync('dpkg-deb', ['-f', oldDeb, 'Architecture'], { encoding: 'utf8' })).toBe(
      'all\n',
    );
    await stubStockDebian(root);
    await root.stub('nodejs', '22.23.3', process.execPath);
    const installed = await root.dpkg(['-i', oldDeb]);
    expect(installed.code, installed.output).toBe(0);
    const tokenFile = join(root.dir, 'etc/registrar-agent/token');
    writeFileSync(tokenFile, bed.token, { mode: 0o600 });
    writeFileSync(
      join(root.dir, 'etc/registrar-agent/agent.yaml'),
      [
        `url: ${bed.runtime.url}`,
        'group: web',
        'namespace: shop',
        `ip: [${IP}]`,
        'imds: { enabled: false }',
        `auth: { mode: token, tokenFile: ${tokenFile} }`,
        'timing: { drainDelay: 1s }',
        '',
      ].join('\n'),
    );
    execFileSync(join(root.dir, '.stand-in-bin/systemctl'), ['start', 'registrar-agent.service'], {
      env: { ...process.env, STAND_IN_ROOT: root.dir },
    });
    await waitFor(connected, `the ${previousVersion} agent to register`, 30_000);
    // Node.js runs it: the bundle of the previous release.
    expect(readlinkSync(`/proc/${agentPid()}/exe`)).toBe(process.execPath);
  }, 60_000);

  it('upgraded to the amd64 executable (keeping the edited agent.yaml): the running agent stops, the executable registers the same entry, the bundle is gone', async () => {
    const before = await bed.entry(ENTRY);
    const oldPid = agentPid();
    // The shipped agent.yaml changed since the previous release (nothing active in it any
    // more), and this VM's was edited: dpkg asks which to keep. An unattended upgrade answers
    // with --force-confold (`apt-get -o Dpkg::Options::=--force-confold install ./...`, what
    // Ansible's apt module passes by default): the operator's file stays.
    const upgraded = await root.dpkg(['--force-confold', '-i', newDeb]);
    expect(upgraded.code, upgraded.output).toBe(0);
    expect(upgraded.output).toContain(
      `Unpacking registrar-agent (${currentVersion().replace('-', '~')}) over (${previousVersion})`,
    );
    const after = await waitFor(
      async () => (agentPid() !== oldPid ? connected() : undefined),
      'the executable to register the VM again',
      30_000,
    );
    expect(alive(oldPid)).toBe(false);
    expect(after.we.metadata.uid).toBe(before?.we.metadata.uid);
    // The executable runs it now, not Node.js.
    expect(readlinkSync(`/proc/${agentPid()}/exe`)).toBe(
      join(root.dir, 'opt/registrar-agent/registrar-agent'),
    );
    expect(existsSync(join(root.dir, 'opt/registrar-agent/registrar-agent.mjs'))).toBe(false);
    expect(readFileSync(join(root.dir, 'etc/registrar-agent/agent.yaml'), 'utf8')).toContain(
      'group: web',
    );
    expect(
      execFileSync(
        'dpkg-query',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format, not ours
        [`--root=${root.dir}`, '-W', '-f', '${Version} ${Architecture}', 'registrar-agent'],
        {
          encoding: 'utf8',
        },
      ),
    ).toBe(`${currentVersion().replace('-', '~')} amd64`);
  }, 90_000);
});
