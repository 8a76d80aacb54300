import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type PackagedPath, sourcePath } from './agent-files.ts';
import { AGENT_PACKAGE, PACKAGE_ARCH, packageVersion } from './agent-package.ts';
import { type AgentPackageBuild, stageAgentTree, XZ_LEVEL } from './agent-stage.ts';

/**
 * registrar-agent_<version>_<amd64|arm64>.deb, packed by dpkg-deb from a staged tree: the listed
 * files owned by root (--root-owner-group; other owners are set by postinst once the user
 * exists), the `config` lines as conffiles, and the maintainer scripts and file trigger in
 * packaging/deb/.
 */
export function buildDeb(build: AgentPackageBuild): string {
  const version = packageVersion(build.version);
  const arch = PACKAGE_ARCH[build.arch].deb;
  const stage = mkdtempSync(join(tmpdir(), 'registrar-deb-'));
  try {
    stageAgentTree(build, stage);
    const control = join(stage, 'DEBIAN');
    mkdirSync(control);
    writeFileSync(join(control, 'control'), controlFile(version, arch, installedKilobytes(build)));
    const conffiles = build.paths.filter((path) => path.kind === 'config');
    if (conffiles.length > 0) {
      writeFileSync(join(control, 'conffiles'), conffiles.map((p) => `${p.target}\n`).join(''));
    }
    // The file trigger on Istio's istio-start.sh: postinst `triggered` takes the sidecar's
    // directories back after istio-sidecar configured (packaging/deb/triggers).
    writeFileSync(
      join(control, 'triggers'),
      readFileSync(join(build.root, 'packaging/deb/triggers'), 'utf8'),
    );
    for (const script of ['postinst', 'prerm', 'postrm']) {
      let text = readFileSync(join(build.root, 'packaging/deb', script), 'utf8');
      if (script === 'postinst') text = text.replace('#OWNERS#\n', ownerLines(build.paths));
      writeFileSync(join(control, script), text);
      chmodSync(join(control, script), 0o755);
    }
    chmodSync(control, 0o755);
    mkdirSync(build.outDir, { recursive: true });
    const deb = join(build.outDir, `${AGENT_PACKAGE.name}_${version}_${arch}.deb`);
    const compress = (build.compression ?? 'xz') === 'xz' ? ['-Zxz', `-z${XZ_LEVEL}`] : ['-Znone'];
    execFileSync('dpkg-deb', ['--root-owner-group', ...compress, '--build', stage, deb], {
      env: { ...process.env, SOURCE_DATE_EPOCH: String(build.epochSeconds) },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return deb;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

function controlFile(version: string, arch: string, kilobytes: number): string {
  const [first, ...rest] = AGENT_PACKAGE.description;
  return [
    `Package: ${AGENT_PACKAGE.name}`,
    `Version: ${version}`,
    `Architecture: ${arch}`,
    `Maintainer: ${AGENT_PACKAGE.maintainer}`,
    `Installed-Size: ${kilobytes}`,
    // useradd (postinst) is in passwd, which is not Essential.
    `Depends: ${AGENT_PACKAGE.debDepends}`,
    'Section: net',
    'Priority: optional',
    `Description: ${AGENT_PACKAGE.summary}`,
    ...[first, ...rest].map((line) => ` ${line}`),
    '',
  ].join('\n');
}

/** Debian policy's Installed-Size: the files' sizes in KiB, rounded up (a dir counts 1). */
function installedKilobytes(build: AgentPackageBuild): number {
  let bytes = 0;
  for (const path of build.paths) {
    bytes +=
      path.source === undefined
        ? 1024
        : statSync(sourcePath(build.root, build.bundleDir, path.source)).size;
  }
  return Math.ceil(bytes / 1024);
}

/** postinst's `chown` for each path the list gives to another owner than root. */
function ownerLines(paths: readonly PackagedPath[]): string {
  return paths
    .filter((path) => path.user !== 'root' || path.group !== 'root')
    .map((path) => `  chown ${path.user}:${path.group} "$root${path.target}"\n`)
    .join('');
}
