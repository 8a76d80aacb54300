/**
 * `npm run release`: builds the release of this commit (package.json's version) into
 * dist/release/<version>/ with SHA256SUMS, and prints the lines CHANGELOG.md's section of the
 * release lists them with (docs/contributing.md, "Releasing").
 *
 * The build is the commit's alone (packaging/commit-build.ts: `git archive`, `npm ci`, every
 * file time the commit's), never this checkout's node_modules, so anyone can rebuild the same
 * bytes: `npm run release -- --check [version]` rebuilds a release CHANGELOG.md records (the
 * newest by default) at its commit and compares each artifact with its recorded SHA-256. A
 * working tree with changes is refused: they would not be in the release (`npm run package`
 * builds a checkout as it is).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { projectVersion } from '../packaging/agent-package.ts';
import { buildFromCommit } from '../packaging/commit-build.ts';
import { compareArtifacts, recordedArtifacts } from '../packaging/release-record.ts';

const { values, positionals } = parseArgs({
  options: { check: { type: 'boolean', default: false } },
  allowPositionals: true,
});
const root = resolve(import.meta.dirname, '..');
const log = (line: string) => process.stderr.write(`release: ${line}\n`);

if (values.check) {
  const changelog = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
  const version = positionals[0] ?? newestRecorded(changelog);
  const commit = new RegExp(
    `\\n## ${version.replaceAll('.', '\\.')} - [^\\n]*\\n+Commit: ([0-9a-f]{40})`,
  ).exec(changelog)?.[1];
  if (!commit) {
    log(`CHANGELOG.md records no commit for release '${version}'`);
    process.exit(2);
  }
  const outDir = mkdtempSync(join(tmpdir(), `registrar-release-check-${version}-`));
  let ok = false;
  try {
    const built = buildFromCommit({ repo: root, commit, outDir, log });
    const compared = compareArtifacts(recordedArtifacts(changelog, version), built);
    ok = compared.ok;
    process.stdout.write(
      `release ${version} of ${commit}, rebuilt:\n${compared.lines.map((l) => `  ${l}\n`).join('')}`,
    );
  } finally {
    // Before exiting: process.exit skips a finally still to come.
    rmSync(outDir, { recursive: true, force: true });
  }
  process.exit(ok ? 0 : 1);
}

const status = execFileSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'], {
  encoding: 'utf8',
}).trim();
if (status !== '') {
  log(
    'the working tree has changes; commit them first (npm run package builds a checkout as it is)',
  );
  process.exit(1);
}
const version = projectVersion(root);
const outDir = join(root, 'dist/release', version);
rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const staging = mkdtempSync(join(tmpdir(), `registrar-release-${version}-`));
try {
  const built = buildFromCommit({ repo: root, commit: 'HEAD', outDir: staging, log });
  for (const artifact of built) copyFileSync(artifact.path, join(outDir, artifact.name));
  // sha256sum's format: `sha256sum -c SHA256SUMS` checks a download.
  writeFileSync(join(outDir, 'SHA256SUMS'), built.map((a) => `${a.sha256}  ${a.name}\n`).join(''));
  process.stdout.write(
    [
      `release ${version} written to ${relative(root, outDir)}/ with SHA256SUMS; for CHANGELOG.md:`,
      '',
      '| artifact | SHA-256 |',
      '| --- | --- |',
      ...built.map((a) => `| \`${a.name}\` | \`${a.sha256}\` |`),
      '',
    ].join('\n'),
  );
} finally {
  rmSync(staging, { recursive: true, force: true });
}

/** The newest release whose section lists artifacts (releases are written newest first). */
function newestRecorded(changelog: string): string {
  for (const match of changelog.matchAll(/^## (\S+) - \d{4}-\d\d-\d\d$/gm)) {
    const version = match[1] ?? '';
    if (recordedArtifacts(changelog, version).length > 0) return version;
  }
  log('CHANGELOG.md records no release with artifacts');
  process.exit(2);
}
