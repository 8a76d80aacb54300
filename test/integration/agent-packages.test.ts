import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ARCH, projectVersion } from '../../packaging/agent-package.ts';
import { AGENT_ARCHES, type AgentArch, hostArch } from '../../packaging/agent-runtime.ts';
import { buildDeb } from '../../packaging/deb-package.ts';
import { buildRpm } from '../../packaging/rpm-package.ts';
import { type PackageInputs, packageInputs } from '../fixtures/agent-package-build.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, entryName, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { killChild } from '../fixtures/agent-unit.ts';
import { highestVersions, STOCK_LIBRARIES, versionAtMost } from '../fixtures/library-needs.ts';

/**
 * The agent's .deb and .rpm for x86_64 and aarch64 as their package managers read them
 * (dpkg-deb, rpm): the metadata an operator's `apt`/`dnf` acts on (the architecture, and
 * dependencies a stock system meets: no Node.js, no repository to add), every listed file with
 * its mode and owner, the configuration file kept on upgrade, the scripts; the x86_64 .rpm
 * installed into a scratch root, whose executable registers a VM; and a rebuild of the same
 * sources at the same SOURCE_DATE_EPOCH, compressed as a release is, is the same bytes (a
 * release's checksums can be checked by building it again).
 */
const REPO = join(import.meta.dirname, '..', '..');
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const run = (program: string, args: string[]) =>
  execFileSync(program, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

// dpkg-deb and rpmbuild (Debian's dpkg and rpm): CI installs them and always runs this.
const hasCommand = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
const tools = ['dpkg-deb', 'rpmbuild', 'rpm2archive'].every(hasCommand);

describe.runIf(tools || process.env.CI === 'true')('the agent packages', () => {
  let work: string;
  let inputs: PackageInputs;
  const debs = {} as Record<AgentArch, string>;
  const rpms = {} as Record<AgentArch, string>;
  let bed: AgentTestbed | undefined;
  let agent: ChildProcess | undefined;
  const build = (arch: AgentArch, outDir = join(work, 'out')) =>
    inputs.build(arch, { version: '1.2.3-dev', outDir });

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'agent-packages-'));
    inputs = await packageInputs(work, AGENT_ARCHES);
    for (const arch of AGENT_ARCHES) {
      debs[arch] = buildDeb(build(arch));
      rpms[arch] = buildRpm(build(arch));
    }
  }, 180_000);
  afterAll(async () => {
    await killChild(agent);
    await bed?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it.each(AGENT_ARCHES)(
    'the %s .deb names its architecture and depends only on what a stock Debian or Ubuntu installs',
    (arch) => {
      const deb = debs[arch];
      expect(deb.endsWith(`registrar-agent_1.2.3~dev_${PACKAGE_ARCH[arch].deb}.deb`)).toBe(true);
      const info = run('dpkg-deb', ['-I', deb]);
      expect(info).toMatch(/^ Package: registrar-agent$/m);
      expect(info).toMatch(/^ Version: 1\.2\.3~dev$/m);
      expect(info).toMatch(new RegExp(`^ Architecture: ${PACKAGE_ARCH[arch].deb}$`, 'm'));
      expect(info).toMatch(
        /^ Depends: libc6 \(>= 2\.28\), libgcc-s1 \| libgcc1, libstdc\+\+6 \(>= 5\), passwd$/m,
      );
      expect(info).not.toMatch(/nodejs/);
      expect(run('dpkg-deb', ['-f', deb, 'Installed-Size'])).toMatch(/^\d+\n$/);
      for (const script of ['postinst', 'prerm', 'postrm']) expect(info).toContain(` ${script} `);
      const control = join(work, `control-${arch}`);
      execFileSync('dpkg-deb', ['-e', deb, control]);
      expect(readFileSync(join(control, 'conffiles'), 'utf8')).toBe(
        '/etc/registrar-agent/agent.yaml\n',
      );
      expect(readFileSync(join(control, 'postinst'), 'utf8')).not.toMatch(/node/);
      // The file trigger on Istio's start script: postinst `triggered` takes the sidecar back
      // after istio-sidecar configured (test/integration/sidecar-deb-trigger.test.ts runs it).
      expect(readFileSync(join(control, 'triggers'), 'utf8')).toMatch(
        /^interest-noawait \/usr\/local\/bin\/istio-start\.sh$/m,
      );
    },
  );

  it.each(AGENT_ARCHES)(
    'the %s .deb holds every listed path, owned by root, with its mode: the executable, no bundle',
    (arch) => {
      const listing = run('dpkg-deb', ['-c', debs[arch]]);
      for (const path of inputs.build(arch, { version: '1', outDir: work }).paths) {
        const line = listing
          .split('\n')
          .find((l) => l.endsWith(` .${path.target}${path.kind === 'dir' ? '/' : ''}`));
        expect(line, path.target).toBeDefined();
        expect(line?.slice(0, 10), path.target).toBe(modeString(path.kind === 'dir', path.mode));
        expect(line, path.target).toContain(' root/root ');
      }
      expect(listing).toMatch(
        /^-rwxr-xr-x root\/root +\d{8,} .* \.\/opt\/registrar-agent\/registrar-agent$/m,
      );
      expect(listing).not.toContain('.mjs');
      expect(listing).toMatch(/^drwxr-xr-x root\/root +0 [\d-]+ [\d:]+ \.\/$/m);
    },
  );

  it.each(AGENT_ARCHES)(
    'the %s .rpm names its architecture, requires only the C and C++ libraries Amazon Linux 2023 has, and keeps its config file',
    (arch) => {
      const rpm = rpms[arch];
      expect(rpm.endsWith(`registrar-agent-1.2.3~dev-1.${PACKAGE_ARCH[arch].rpm}.rpm`)).toBe(true);
      const info = run('rpm', ['-qip', rpm]);
      expect(info).toMatch(/^Name\s+: registrar-agent$/m);
      expect(info).toMatch(/^Version\s+: 1\.2\.3~dev$/m);
      expect(info).toMatch(new RegExp(`^Architecture: ${PACKAGE_ARCH[arch].rpm}$`, 'm'));
      const requires = run('rpm', ['-qp', '--requires', rpm]).trim().split('\n');
      expect(requires).toContain('shadow-utils');
      expect(requires).toContain('libstdc++.so.6()(64bit)');
      expect(requires.filter((r) => /node/i.test(r))).toEqual([]);
      // Apart from useradd and rpm's own features, only shared libraries of this CPU's
      // 64-bit ABI, no newer than Amazon Linux 2023's glibc 2.34 and GCC 11.
      const libraries = requires.filter(
        (r) => r !== 'shadow-utils' && r !== '/bin/sh' && !r.startsWith('rpmlib('),
      );
      expect(libraries.filter((r) => !/\(64bit\)$|^rtld\(GNU_HASH\)$/.test(r))).toEqual([]);
      const highest = highestVersions(libraries);
      const al2023 = STOCK_LIBRARIES['Amazon Linux 2023 (glibc 2.34, GCC 11)'];
      for (const family of ['GLIBC', 'GLIBCXX', 'CXXABI', 'GCC'] as const) {
        expect(versionAtMost(highest[family], al2023?.[family] ?? '0'), family).toBe(true);
      }
      expect(run('rpm', ['-qcp', rpm])).toBe('/etc/registrar-agent/agent.yaml\n');
      const scripts = run('rpm', ['-qp', '--scripts', rpm]);
      for (const phase of ['preinstall', 'postinstall', 'preuninstall', 'postuninstall']) {
        expect(scripts).toContain(`${phase} scriptlet`);
      }
      expect(scripts).toContain('useradd --system');
      expect(scripts).toContain('systemctl try-restart registrar-agent.service');
      expect(scripts).not.toMatch(/node/);
      // After Istio's package, the sidecar's take-back (test/integration/sidecar-rpm-trigger.test.ts).
      const triggers = run('rpm', ['-qp', '--triggers', rpm]);
      expect(triggers).toMatch(/^triggerin scriptlet \(using \/bin\/sh\) -- istio-sidecar$/m);
      expect(triggers).toContain('/opt/registrar-agent/istio-sidecar-repair.sh');
    },
  );

  it.each(AGENT_ARCHES)(
    'the %s .rpm holds every listed path with its mode and owner, and nothing else: no drop-in, no build-id links',
    (arch) => {
      const listing = run('rpm', ['-qlvp', rpms[arch]]).trim().split('\n');
      const paths = inputs.build(arch, { version: '1', outDir: work }).paths;
      for (const path of paths) {
        const line = listing.find((l) => l.endsWith(` ${path.target}`));
        expect(line, path.target).toBeDefined();
        expect(line?.slice(0, 10), path.target).toBe(modeString(path.kind === 'dir', path.mode));
        expect(line, path.target).toMatch(new RegExp(` ${path.user} +${path.group} `));
      }
      expect(listing.length).toBe(paths.length);
      expect(listing.filter((l) => /\.build-id|\.service\.d|\.mjs/.test(l))).toEqual([]);
    },
  );

  it('refuses to package an executable built for another CPU, naming both', () => {
    const mixed = {
      ...build('x86_64', join(work, 'mixed')),
      bundleDir: dirname(inputs.executable('aarch64')),
    };
    expect(() => buildDeb(mixed)).toThrow(/is a program for aarch64, not for x86_64/);
    expect(() => buildRpm(mixed)).toThrow(/is a program for aarch64, not for x86_64/);
    expect(existsSync(join(work, 'mixed'))).toBe(false);
  });

  it('the x86_64 .rpm installs into a scratch root, its executable registers a VM, an edited config survives an upgrade, erase leaves only it (.rpmsave)', async () => {
    // rpm's own database in the root; no scriptlets (they run chrooted, and the root has no
    // shell) and no dependency check (the root has no glibc package): what is checked is what
    // rpm does with the files, from the package's metadata, and that the installed program runs.
    const root = join(work, 'rpm-root');
    const rpmIn = (...args: string[]) => run('rpm', ['--root', root, ...args]);
    rpmIn('--initdb');
    rpmIn('-i', '--nodeps', '--noscripts', rpms.x86_64);
    const installed = join(root, 'opt/registrar-agent/registrar-agent');
    const version = spawnSync(installed, ['--version'], {
      encoding: 'utf8',
      env: { PATH: '/nonexistent' },
    });
    expect(version.stdout).toBe(`registrar-agent ${projectVersion(REPO)}\n`);

    bed = await startAgentTestbed();
    await bed.applyGroup('web');
    const config = join(root, 'etc/registrar-agent/agent.yaml');
    const shipped = readFileSync(config, 'utf8');
    writeFileSync(
      config,
      `${shipped}\nurl: ${bed.runtime.url}\ngroup: web\nnamespace: shop\nip: [10.0.41.1]\nimds: { enabled: false }\n`,
    );
    const tokenFile = join(root, 'etc/registrar-agent/token');
    writeFileSync(tokenFile, bed.token, { mode: 0o600 });
    // The packaged tokenFile path, moved into the scratch root.
    agent = spawn(
      installed,
      ['--config', config, '--token-file', tokenFile, '--drain-delay', '0'],
      {
        env: { PATH: '/nonexistent' },
        stdio: 'ignore',
      },
    );
    const entry = await waitFor(
      async () => {
        const found = await bed?.entry(entryName('web', '10.0.41.1'));
        return found?.connected ? found : undefined;
      },
      'the agent installed from the .rpm to register',
      30_000,
    );
    expect(entry.we.metadata.namespace).toBe('shop');
    await killChild(agent);

    writeFileSync(config, 'url: wss://edited.example/v1\n');
    const newer = buildRpm(
      inputs.build('x86_64', { version: '1.2.3-dev.1', outDir: join(work, 'newer') }),
    );
    rpmIn('-U', '--nodeps', '--noscripts', newer);
    expect(rpmIn('-q', 'registrar-agent')).toBe('registrar-agent-1.2.3~dev.1-1.x86_64\n');
    expect(readFileSync(config, 'utf8')).toBe('url: wss://edited.example/v1\n');
    rmSync(tokenFile);
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
    expect(existsSync(join(root, 'opt/registrar-agent'))).toBe(false);
  }, 120_000);

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

  // What is compressed does not change how: a small program of this machine's CPU stands in
  // for the 119 MB executable, which xz takes ~11 s of CPU a package to compress (four builds
  // here would hold the test worker for minutes). `npm run package` in CI builds the real ones.
  it('compressed as a release compresses them (xz), rebuilt from the same sources at the same SOURCE_DATE_EPOCH, both are the same bytes', () => {
    const arch = hostArch() ?? 'x86_64';
    const standIn = join(work, 'stand-in');
    mkdirSync(standIn);
    copyFileSync('/usr/bin/true', join(standIn, 'registrar-agent'));
    const release = (dir: string) => ({
      ...inputs.build(arch, { version: '1.2.3-dev', outDir: join(work, dir) }),
      bundleDir: standIn,
      compression: 'xz' as const,
    });
    const deb = buildDeb(release('xz-1'));
    const rpm = buildRpm(release('xz-1'));
    // The .deb is an ar archive whose member names are plain text.
    expect(readFileSync(deb).includes('data.tar.xz')).toBe(true);
    expect(run('rpm', ['-qp', '--queryformat', '%{PAYLOADCOMPRESSOR}', rpm])).toBe('xz');
    expect(sha256(buildDeb(release('xz-2')))).toBe(sha256(deb));
    expect(sha256(buildRpm(release('xz-2')))).toBe(sha256(rpm));
  });
});

/** `ls -l`'s first column: `drwxr-xr-x`, `-rw-r--r--`. */
function modeString(dir: boolean, mode: number): string {
  const bits = 'rwxrwxrwx';
  return (dir ? 'd' : '-') + [...bits].map((c, i) => (mode & (1 << (8 - i)) ? c : '-')).join('');
}
