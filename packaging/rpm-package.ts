import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { PackagedPath } from './agent-files.ts';
import { AGENT_PACKAGE, packageVersion } from './agent-package.ts';
import { stageAgentTree, stampTree } from './agent-stage.ts';
import type { AgentPackageBuild } from './deb-package.ts';

const UNIT_TARGET = '/usr/lib/systemd/system/registrar-agent.service';
/** Amazon Linux's Node.js 22, whatever /usr/bin/node points to (agent-package.ts). */
export const RPM_NODE_DROP_IN = '/usr/lib/systemd/system/registrar-agent.service.d/10-node22.conf';

/**
 * registrar-agent-<version>-1.noarch.rpm, built by rpmbuild from a spec written here: the
 * listed files with their modes and owners (`%attr`), the `config` lines as
 * `%config(noreplace)` (an edited file is kept on upgrade, and saved as .rpmsave on erase), the
 * scriptlets in packaging/rpm/ (a trigger on Istio's package among them), and one drop-in of the RPM's own that starts the unit's
 * command with Node.js 22.
 */
export function buildRpm(build: AgentPackageBuild): string {
  const version = packageVersion(build.version);
  const work = mkdtempSync(join(tmpdir(), 'registrar-rpm-'));
  try {
    const stage = join(work, 'stage');
    stageAgentTree(build.root, build.bundleDir, stage, build.paths, build.epochSeconds);
    const dropIn = join(stage, RPM_NODE_DROP_IN);
    mkdirSync(dirname(dropIn), { recursive: true });
    writeFileSync(dropIn, node22DropIn(readFileSync(join(stage, UNIT_TARGET), 'utf8')));
    stampTree(stage, build.epochSeconds);
    const spec = join(work, `${AGENT_PACKAGE.name}.spec`);
    writeFileSync(spec, specFile(build, version, stage));
    mkdirSync(build.outDir, { recursive: true });
    execFileSync(
      'rpmbuild',
      [
        '-bb',
        '--quiet',
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
        spec,
      ],
      {
        env: { ...process.env, SOURCE_DATE_EPOCH: String(build.epochSeconds) },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    return join(build.outDir, `${AGENT_PACKAGE.name}-${version}-1.noarch.rpm`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The unit's ExecStart with /usr/bin/node-22 instead of /usr/bin/node, as a drop-in. */
export function node22DropIn(unit: string): string {
  const exec = /^ExecStart=\/usr\/bin\/node (.*)$/m.exec(unit)?.[1];
  if (exec === undefined) {
    throw new Error(`${UNIT_TARGET}: no 'ExecStart=/usr/bin/node ...' line to run with Node.js 22`);
  }
  return [
    '# Installed by the RPM: on Amazon Linux 2023 /usr/bin/node is whichever Node.js',
    '# `alternatives` made active; the agent runs with Node.js 22 (package nodejs22).',
    '[Service]',
    'ExecStart=',
    `ExecStart=${AGENT_PACKAGE.rpmNode} ${exec}`,
    '',
  ].join('\n');
}

function specFile(build: AgentPackageBuild, version: string, stage: string): string {
  const script = (name: string) =>
    readFileSync(join(build.root, 'packaging/rpm', `${name}.sh`), 'utf8').trimEnd();
  return [
    `Name: ${AGENT_PACKAGE.name}`,
    `Version: ${version}`,
    'Release: 1',
    `Summary: ${AGENT_PACKAGE.summary}`,
    `License: ${AGENT_PACKAGE.license}`,
    'BuildArch: noarch',
    // Only what is declared: rpm's generators would otherwise read the bundle's shebang-less
    // JavaScript and the shell scripts and guess.
    'AutoReqProv: no',
    `Requires: ${AGENT_PACKAGE.rpmRequires}`,
    'Requires(pre): shadow-utils',
    '%global debug_package %{nil}',
    '%global __os_install_post %{nil}',
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
    `%attr(0644,root,root) ${RPM_NODE_DROP_IN}`,
    ...packageDirs([...build.paths.map((path) => path.target), RPM_NODE_DROP_IN], build.paths),
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
