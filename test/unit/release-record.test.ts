import { describe, expect, it } from 'vitest';
import { compareArtifacts, recordedArtifacts } from '../../packaging/release-record.ts';

const sum = (digit: string) => digit.repeat(64);
const CHANGELOG = [
  '# Changelog',
  '',
  '## 1.1.0 - 2026-12-01',
  '',
  'Commit: pending',
  '',
  '## 1.0.0 - 2026-11-01',
  '',
  '| artifact | SHA-256 |',
  '| --- | --- |',
  `| \`a-1.0.0.tgz\` | \`${sum('a')}\` |`,
  `| \`b-1.0.0.deb\` | \`${sum('b')}\` |`,
  '',
  '## 0.9.0 - 2026-10-01',
  '',
  `| \`a-0.9.0.tgz\` | \`${sum('c')}\` |`,
  '',
].join('\n');

describe('a release as CHANGELOG.md records it', () => {
  it("reads the rows of the release's own section only, in order", () => {
    expect(recordedArtifacts(CHANGELOG, '1.0.0')).toEqual([
      { name: 'a-1.0.0.tgz', sha256: sum('a') },
      { name: 'b-1.0.0.deb', sha256: sum('b') },
    ]);
    expect(recordedArtifacts(CHANGELOG, '0.9.0')).toEqual([
      { name: 'a-0.9.0.tgz', sha256: sum('c') },
    ]);
    expect(recordedArtifacts(CHANGELOG, '1.1.0')).toEqual([]);
    expect(recordedArtifacts(CHANGELOG, '2.0.0')).toEqual([]);
  });

  it('is matched by a rebuild only when every artifact has its recorded sum', () => {
    const recorded = recordedArtifacts(CHANGELOG, '1.0.0');
    expect(compareArtifacts(recorded, recorded)).toEqual({
      ok: true,
      lines: [`a-1.0.0.tgz: ok ${sum('a')}`, `b-1.0.0.deb: ok ${sum('b')}`],
    });
    const other = [
      { name: 'a-1.0.0.tgz', sha256: sum('a') },
      { name: 'b-1.0.0.deb', sha256: sum('d') },
    ];
    expect(compareArtifacts(recorded, other)).toEqual({
      ok: false,
      lines: [
        `a-1.0.0.tgz: ok ${sum('a')}`,
        `b-1.0.0.deb: differs: recorded ${sum('b')}, built ${sum('d')}`,
      ],
    });
  });

  it('is not matched when an artifact is missing on either side, or nothing is recorded', () => {
    const recorded = recordedArtifacts(CHANGELOG, '1.0.0');
    const fewer = compareArtifacts(recorded, recorded.slice(0, 1));
    expect(fewer.ok).toBe(false);
    expect(fewer.lines[1]).toBe(`b-1.0.0.deb: recorded (${sum('b')}), not built`);
    const more = compareArtifacts(recorded.slice(0, 1), recorded);
    expect(more.ok).toBe(false);
    expect(more.lines[1]).toBe(`b-1.0.0.deb: built (${sum('b')}), not recorded`);
    expect(compareArtifacts([], []).ok).toBe(false);
  });
});
