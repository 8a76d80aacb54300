/**
 * `npm run release`: builds the release of this commit (package.json's version) into
 * dist/release/<version>/ with SHA256SUMS, and prints the lines CHANGELOG.md's section of the
 * release lists them with (docs/contributing.md, "Releasing").
 *
 * The artifacts are reproducible: every file time is the commit's (SOURCE_DATE_EPOCH), so anyone
 * can run this at the commit CHANGELOG.md names and get the same checksums. A working tree with
 * changes is refused: the artifacts would not be the commit's.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { projectVersion } from '../packaging/agent-package.ts';
import { artifactNames, buildArtifacts } from '../packaging/build-artifacts.ts';

const { values } = parseArgs({ options: { 'allow-dirty': { type: 'boolean', default: false } } });
const root = resolve(import.meta.dirname, '..');
const git = (...args: string[]) =>
  execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim();

if (!values['allow-dirty'] && git('status', '--porcelain', '--untracked-files=no') !== '') {
  process.stderr.write(
    'release: the working tree has changes; commit them first (or pass --allow-dirty for a build that is not a release)\n',
  );
  process.exit(1);
}
const version = projectVersion(root);
const commit = git('rev-parse', 'HEAD');
const epochSeconds = Number(git('log', '-1', '--format=%ct', 'HEAD'));
const outDir = join(root, 'dist/release', version);
rmSync(outDir, { recursive: true, force: true });
const artifacts = await buildArtifacts({ root, outDir, epochSeconds });
const names = artifactNames(artifacts);
const sums = names.map((name) => ({
  name,
  sha256: createHash('sha256')
    .update(readFileSync(join(outDir, name)))
    .digest('hex'),
}));
// sha256sum's format: `sha256sum -c SHA256SUMS` checks a download.
writeFileSync(join(outDir, 'SHA256SUMS'), sums.map((s) => `${s.sha256}  ${s.name}\n`).join(''));
process.stdout.write(
  [
    `release ${version} of ${commit}${values['allow-dirty'] ? ' (with uncommitted changes: not a release)' : ''}`,
    `written to ${relative(root, outDir)}/ with SHA256SUMS; for CHANGELOG.md:`,
    '',
    '| artifact | SHA-256 |',
    '| --- | --- |',
    ...sums.map((s) => `| \`${basename(s.name)}\` | \`${s.sha256}\` |`),
    '',
  ].join('\n'),
);
