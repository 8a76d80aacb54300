/**
 * What CHANGELOG.md records of a release's artifacts: its section's table of names and SHA-256
 * sums (docs/contributing.md, "Releasing"), and how a rebuild compares with it.
 */
export interface RecordedArtifact {
  name: string;
  sha256: string;
}

/** The section `## <version> - <date>` up to the next section. */
export function releaseSection(changelog: string, version: string): string | undefined {
  const start = changelog.indexOf(`\n## ${version} - `);
  if (start === -1) return undefined;
  const end = changelog.indexOf('\n## ', start + 1);
  return changelog.slice(start, end === -1 ? undefined : end);
}

/** The `| \`name\` | \`sha256\` |` rows of the release's section, in the order written. */
export function recordedArtifacts(changelog: string, version: string): RecordedArtifact[] {
  const section = releaseSection(changelog, version) ?? '';
  return [...section.matchAll(/^\| `([^`]+)` \| `([0-9a-f]{64})` \|$/gm)].map((row) => ({
    name: row[1] ?? '',
    sha256: row[2] ?? '',
  }));
}

/** One line per artifact, recorded or built: `ok`, or what differs. */
export function compareArtifacts(
  recorded: readonly RecordedArtifact[],
  built: readonly RecordedArtifact[],
): { ok: boolean; lines: string[] } {
  const names = [...new Set([...recorded.map((a) => a.name), ...built.map((a) => a.name)])];
  const lines = names.map((name) => {
    const was = recorded.find((a) => a.name === name);
    const now = built.find((a) => a.name === name);
    if (!was) return `${name}: built (${now?.sha256}), not recorded`;
    if (!now) return `${name}: recorded (${was.sha256}), not built`;
    if (was.sha256 !== now.sha256)
      return `${name}: differs: recorded ${was.sha256}, built ${now.sha256}`;
    return `${name}: ok ${now.sha256}`;
  });
  return { ok: recorded.length > 0 && lines.every((line) => line.includes(': ok ')), lines };
}
