import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAgentFiles } from '../../packaging/agent-files.ts';
import { buildDeb } from '../../packaging/deb-package.ts';
import { buildRpm, RPM_NODE_DROP_IN } from '../../packaging/rpm-package.ts';

/**
 * The agent's .deb and .rpm as their package managers read them (dpkg-deb, rpm): the metadata
 * an operator's `apt`/`dnf` acts on, every listed file with its mode and owner, the
 * configuration file kept on upgrade, the scripts; and a rebuild of the same sources at the same
 * SOURCE_DATE_EPOCH is the same bytes (a release's checksums can be checked by rebuilding it).
 */
const REPO = join(import.meta.dirname, '..', '..');
const EPOCH = 1_700_000_000;
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const run = (program: string, args: string[]) =>
  execFileSync(program, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

// dpkg-deb and rpmbuild (Debian's dpkg and rpm): CI installs them and always runs this.
const hasCommand = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
const tools = ['dpkg-deb', 'rpmbuild', 'rpm2archive'].every(hasCommand);

describe.runIf(tools || process.env.CI === 'true')('the agent packages', () => {
  let work: string;
  let deb: string;
  let rpm: string;
  let build: Parameters<typeof buildDeb>[0];

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'agent-packages-'));
    const bundleDir = join(work, 'bundle');
    execFileSync('sh', [join(REPO, 'packaging/build-agent.sh')], {
      env: { ...process.env, OUT_DIR: bundleDir },
      stdio: 'ignore',
    });
    build = {
      root: REPO,
      bundleDir,
      paths: readAgentFiles(REPO),
      epochSeconds: EPOCH,
      version: '1.2.3-dev',
      outDir: join(work, 'out'),
    };
    deb = buildDeb(build);
    rpm = buildRpm(build);
  }, 120_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('the .deb depends on Node.js 22 and names its version, its conffile and its scripts', () => {
    expect(deb.endsWith('registrar-agent_1.2.3~dev_all.deb')).toBe(true);
    const info = run('dpkg-deb', ['-I', deb]);
    expect(info).toMatch(/^ Package: registrar-agent$/m);
    expect(info).toMatch(/^ Version: 1\.2\.3~dev$/m);
    expect(info).toMatch(/^ Architecture: all$/m);
    expect(info).toMatch(/^ Depends: nodejs \(>= 22\), passwd$/m);
    expect(run('dpkg-deb', ['-f', deb, 'Installed-Size'])).toMatch(/^\d+\n$/);
    for (const script of ['postinst', 'prerm', 'postrm']) expect(info).toContain(` ${script} `);
    const conffiles = execFileSync(
      'sh',
      ['-c', `dpkg-deb -e "${deb}" "${work}/control" && cat "${work}/control/conffiles"`],
      {
        encoding: 'utf8',
      },
    );
    expect(conffiles).toBe('/etc/registrar-agent/agent.yaml\n');
    // The file trigger on Istio's start script: postinst `triggered` takes the sidecar back
    // after istio-sidecar configured (test/integration/sidecar-deb-trigger.test.ts runs it).
    const triggers = readFileSync(join(work, 'control/triggers'), 'utf8');
    expect(triggers).toMatch(/^interest-noawait \/usr\/local\/bin\/istio-start\.sh$/m);
  });

  it('the .deb holds every listed path, owned by root, with its mode', () => {
    const listing = run('dpkg-deb', ['-c', deb]);
    for (const path of build.paths) {
      const line = listing
        .split('\n')
        .find((l) => l.endsWith(` .${path.target}${path.kind === 'dir' ? '/' : ''}`));
      expect(line, path.target).toBeDefined();
      expect(line?.slice(0, 10), path.target).toBe(modeString(path.kind === 'dir', path.mode));
      expect(line, path.target).toContain(' root/root ');
    }
    expect(listing).toMatch(/^drwxr-xr-x root\/root +0 [\d-]+ [\d:]+ \.\/$/m);
  });

  it('the .rpm requires nodejs22, keeps its config file, and runs the unit with node-22', () => {
    expect(rpm.endsWith('registrar-agent-1.2.3~dev-1.noarch.rpm')).toBe(true);
    const info = run('rpm', ['-qip', rpm]);
    expect(info).toMatch(/^Name\s+: registrar-agent$/m);
    expect(info).toMatch(/^Version\s+: 1\.2\.3~dev$/m);
    expect(info).toMatch(/^Architecture: noarch$/m);
    const requires = run('rpm', ['-qp', '--requires', rpm]).split('\n');
    expect(requires).toContain('nodejs22');
    expect(requires).toContain('shadow-utils');
    expect(run('rpm', ['-qcp', rpm])).toBe('/etc/registrar-agent/agent.yaml\n');
    const dropIn = execFileSync(
      'sh',
      ['-c', `rpm2archive -n < "${rpm}" | tar -xO .${RPM_NODE_DROP_IN}`],
      {
        encoding: 'utf8',
      },
    );
    expect(dropIn).toMatch(/^ExecStart=$/m);
    expect(dropIn).toMatch(
      /^ExecStart=\/usr\/bin\/node-22 --max-semi-space-size=1 .*\/opt\/registrar-agent\/registrar-agent\.mjs /m,
    );
    const scripts = run('rpm', ['-qp', '--scripts', rpm]);
    for (const phase of ['preinstall', 'postinstall', 'preuninstall', 'postuninstall']) {
      expect(scripts).toContain(`${phase} scriptlet`);
    }
    expect(scripts).toContain('useradd --system');
    expect(scripts).toContain('systemctl try-restart registrar-agent.service');
    // After Istio's package, the sidecar's take-back (test/integration/sidecar-rpm-trigger.test.ts).
    const triggers = run('rpm', ['-qp', '--triggers', rpm]);
    expect(triggers).toMatch(/^triggerin scriptlet \(using \/bin\/sh\) -- istio-sidecar$/m);
    expect(triggers).toContain('/opt/registrar-agent/istio-sidecar-repair.sh');
  });

  it('the .rpm holds every listed path with its mode and owner, and owns the drop-in folder it adds', () => {
    const listing = run('rpm', ['-qlvp', rpm]).split('\n');
    for (const path of build.paths) {
      const line = listing.find((l) => l.endsWith(` ${path.target}`));
      expect(line, path.target).toBeDefined();
      expect(line?.slice(0, 10), path.target).toBe(modeString(path.kind === 'dir', path.mode));
      expect(line, path.target).toMatch(new RegExp(` ${path.user} +${path.group} `));
    }
    expect(
      listing.some(
        (l) =>
          l.startsWith('d') && l.endsWith(' /usr/lib/systemd/system/registrar-agent.service.d'),
      ),
    ).toBe(true);
    expect(listing.some((l) => l.endsWith(` ${RPM_NODE_DROP_IN}`))).toBe(true);
  });

  it('the .rpm installs into a scratch root, keeps an edited config on upgrade, and leaves only it (.rpmsave) on erase', () => {
    // rpm's own database in the root; no scriptlets (they run chrooted, and the root has no
    // shell): what is checked is what rpm does with the files, from the package's metadata.
    const root = join(work, 'rpm-root');
    const rpmIn = (...args: string[]) => run('rpm', ['--root', root, ...args]);
    rpmIn('--initdb');
    rpmIn('-i', '--nodeps', '--noscripts', rpm);
    const config = join(root, 'etc/registrar-agent/agent.yaml');
    writeFileSync(config, 'url: wss://edited.example/v1\n');
    const newer = buildRpm({ ...build, version: '1.2.3-dev.1', outDir: join(work, 'newer') });
    rpmIn('-U', '--nodeps', '--noscripts', newer);
    expect(rpmIn('-q', 'registrar-agent')).toBe('registrar-agent-1.2.3~dev.1-1.noarch\n');
    expect(readFileSync(config, 'utf8')).toBe('url: wss://edited.example/v1\n');
    rpmIn('-e', '--nodeps', '--noscripts', 'registrar-agent');
    const left = run('find', [
      root,
      '-path',
      join(root, 'root'),
      '-prune',
      '-o',
      '-type',
      'f',
      '-print',
    ])
      .trim()
      .split('\n');
    expect(left).toEqual([`${config}.rpmsave`]);
    for (const gone of [
      'opt/registrar-agent',
      'usr/lib/systemd/system/registrar-agent.service.d',
    ]) {
      expect(existsSync(join(root, gone)), gone).toBe(false);
    }
  });

  it('every scriptlet of both packages, and the sidecar scripts they run, is valid sh', () => {
    const scripts = [
      ...['postinst', 'prerm', 'postrm'].map((name) => join(REPO, 'packaging/deb', name)),
      ...['pre', 'post', 'preun', 'postun', 'triggerin'].map((name) =>
        join(REPO, 'packaging/rpm', `${name}.sh`),
      ),
      join(REPO, 'packaging/istio-sidecar-check.sh'),
      join(REPO, 'packaging/istio-sidecar-repair.sh'),
    ];
    for (const script of scripts) expect(spawnSync('sh', ['-n', script]).status, script).toBe(0);
  });

  it('rebuilt from the same sources at the same SOURCE_DATE_EPOCH, both are the same bytes', () => {
    const again = { ...build, outDir: join(work, 'again') };
    expect(sha256(buildDeb(again))).toBe(sha256(deb));
    expect(sha256(buildRpm(again))).toBe(sha256(rpm));
  });
});

/** `ls -l`'s first column: `drwxr-xr-x`, `-rw-r--r--`. */
function modeString(dir: boolean, mode: number): string {
  const bits = 'rwxrwxrwx';
  return (dir ? 'd' : '-') + [...bits].map((c, i) => (mode & (1 << (8 - i)) ? c : '-')).join('');
}
