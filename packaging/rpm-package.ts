import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BUNDLE_PREFIX, type PackagedPath, sourcePath } from './agent-files.ts';
import { AGENT_PACKAGE, PACKAGE_ARCH, packageVersion } from './agent-package.ts';
import { type AgentPackageBuild, elfMachine, stageAgentTree, XZ_LEVEL } from './agent-stage.ts';

/** rpm's own reader of an ELF file's needs (Debian's `rpm` ships it beside rpmbuild). */
export const ELFDEPS = '/usr/lib/rpm/elfdeps';

/**
 * registrar-agent-<version>-1.<x86_64|aarch64>.rpm, built by rpmbuild from a spec written
 * here: the listed files with their modes and owners (`%attr`), the `config` lines as
 * `%config(noreplace)` (an edited file is kept on upgrade, and saved as .rpmsave on erase), the
 * scriptlets in packaging/rpm/ (a trigger on Istio's package among them), and the shared
 * libraries the executable needs, as rpm's generator names them (`libc.so.6(GLIBC_2.28)(64bit)`).
 */
export function buildRpm(build: AgentPackageBuild): string {
  const version = packageVersion(build.version);
  const arch = PACKAGE_ARCH[build.arch].rpm;
  const work = mkdtempSync(join(tmpdir(), 'registrar-rpm-'));
  try {
    const stage = join(work, 'stage');
    stageAgentTree(build, stage);
    const spec = join(work, `${AGENT_PACKAGE.name}.spec`);
    writeFileSync(spec, specFile(build, version, stage, libraryRequires(build)));
    mkdirSync(build.outDir, { recursive: true });
    execFileSync(
      'rpmbuild',
      [
        '-bb',
        '--quiet',
        // The package's CPU, not this machine's: nothing is compiled, the files are copied.
        '--target',
        `${arch}-linux`,
        '--define',
        `_topdir ${join(work, 'rpmbuild')}`,
        '--define',
        `_rpmdir ${build.outDir}`,
        '--define',
        '_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm',
        // Reproducible: the build time and every file's time are SOURCE_DATE_EPOCH's.
        '--define',
        'use_source_date_epoch_as_buildtime 1',
        '--define',
        'clamp_mtime_to_source_date_epoch 1',
        '--define',
        '_buildhost reproducible',
        // Single-threaded xz (rpm's `T` would make the bytes depend on the machine's CPUs).
        '--define',
        `_binary_payload ${(build.compression ?? 'xz') === 'xz' ? `w${XZ_LEVEL}.xzdio` : 'w.ufdio'}`,
        spec,
      ],
      {
        env: { ...process.env, SOURCE_DATE_EPOCH: String(build.epochSeconds) },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    return join(build.outDir, `${AGENT_PACKAGE.name}-${version}-1.${arch}.rpm`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * What the listed programs need of the system, from rpm's own ELF reader: one requirement per
 * shared library and symbol version (`libstdc++.so.6(GLIBCXX_3.4.21)(64bit)`), which dnf
 * resolves to the distribution's glibc, libstdc++ and libgcc of the package's architecture.
 * rpm's automatic generators stay off (AutoReqProv: no): they would guess from the shell
 * scripts and the unit too.
 */
export function libraryRequires(build: AgentPackageBuild): string[] {
  const programs = build.paths
    .filter((path) => path.kind === 'file' && path.source?.startsWith(BUNDLE_PREFIX))
    .map((path) => sourcePath(build.root, build.bundleDir, path.source ?? ''))
    .filter((file) => elfMachine(file) !== undefined);
  if (programs.length === 0) return [];
  if (!existsSync(ELFDEPS)) {
    throw new Error(
      `${ELFDEPS} is missing: it comes with rpm (apt-get install rpm), which builds the .rpm`,
    );
  }
  const requires = new Set<string>();
  for (const program of programs) {
    const printed = execFileSync(ELFDEPS, ['--requires', program], { encoding: 'utf8' });
    for (const line of printed.split('\n')) if (line.trim() !== '') requires.add(line.trim());
  }
  return [...requires].sort();
}

function specFile(
  build: AgentPackageBuild,
  version: string,
  stage: string,
  libraries: readonly string[],
): string {
  const script = (name: string) =>
    readFileSync(join(build.root, 'packaging/rpm', `${name}.sh`), 'utf8').trimEnd();
  return [
    `Name: ${AGENT_PACKAGE.name}`,
    `Version: ${version}`,
    'Release: 1',
    `Summary: ${AGENT_PACKAGE.summary}`,
    `License: ${AGENT_PACKAGE.license}`,
    // No BuildArch: rpmbuild refuses one this machine cannot build for ("No compatible
    // architectures"); `--target` sets the package's architecture instead.
    'AutoReqProv: no',
    ...libraries.map((library) => `Requires: ${library}`),
    'Requires(pre): shadow-utils',
    // The executable as built: not stripped (its SEA blob is a section strip would drop), no
    // debug package, and none of rpm's /usr/lib/.build-id links.
    '%global debug_package %{nil}',
    '%global __os_install_post %{nil}',
    '%global _build_id_links none',
    '',
    '%description',
    ...AGENT_PACKAGE.description,
    '',
    '%install',
    `cp -a ${stage}/. %{buildroot}/`,
    '',
    '%pre',
    script('pre'),
    '',
    '%post',
    script('post'),
    '',
    '%preun',
    script('preun'),
    '',
    '%postun',
    script('postun'),
    '',
    // After Istio's package is installed or upgraded (after its %post, which gives
    // /var/lib/istio/envoy and the mesh config back to istio-proxy), and after this one is
    // installed beside it: the sidecar's take-back (packaging/rpm/triggerin.sh).
    `%triggerin -- ${AGENT_PACKAGE.istioPackage}`,
    script('triggerin'),
    '',
    '%files',
    ...build.paths.map(fileLine),
    ...packageDirs(
      build.paths.map((path) => path.target),
      build.paths,
    ),
    '',
  ].join('\n');
}

// Directories the distribution owns: the package puts files in them but never removes them.
const SYSTEM_DIRS = new Set([
  '/etc',
  '/opt',
  '/usr',
  '/usr/bin',
  '/usr/lib',
  '/usr/lib/systemd',
  '/usr/lib/systemd/system',
  '/usr/lib/sysusers.d',
  '/usr/lib/tmpfiles.d',
  '/var',
  '/var/lib',
]);

/**
 * `%dir` for each directory the package creates and the list does not name (a unit's
 * `.service.d/`): rpm removes on erase only the directories a package owns, where dpkg
 * removes any it created that is left empty.
 */
function packageDirs(targets: readonly string[], paths: readonly PackagedPath[]): string[] {
  const listed = new Set(paths.map((path) => path.target));
  const dirs = new Set<string>();
  for (const target of targets) {
    for (let dir = dirname(target); dir !== '/'; dir = dirname(dir)) {
      if (!SYSTEM_DIRS.has(dir) && !listed.has(dir)) dirs.add(dir);
    }
  }
  return [...dirs].sort().map((dir) => `%dir %attr(0755,root,root) ${dir}`);
}

function fileLine(path: PackagedPath): string {
  const attr = `%attr(${path.mode.toString(8).padStart(4, '0')},${path.user},${path.group})`;
  if (path.kind === 'dir') return `%dir ${attr} ${path.target}`;
  if (path.kind === 'config') return `%config(noreplace) ${attr} ${path.target}`;
  return `${attr} ${path.target}`;
}
