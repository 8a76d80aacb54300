/**
 * Semantic versions (https://semver.org), as releases and agents name themselves:
 * `MAJOR.MINOR.PATCH`, optionally `-PRERELEASE` (`0.2.0-dev`) and `+BUILD`. Pure.
 */
export interface ReleaseVersion {
  major: number;
  minor: number;
  patch: number;
  /** `dev`, `rc.1`: a version before its release (0.2.0-dev < 0.2.0). */
  prerelease?: string;
}

/** At most this long: a version travels in every connect URL and is stored on every entry. */
export const MAX_VERSION_LENGTH = 64;

const NUMBER = '(0|[1-9]\\d{0,8})';
const IDENTIFIERS = '[0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*';
const PATTERN = new RegExp(
  `^${NUMBER}\\.${NUMBER}\\.${NUMBER}(?:-(${IDENTIFIERS}))?(?:\\+${IDENTIFIERS})?$`,
);

/** The version, or undefined when the text is not a semantic version. */
export function parseReleaseVersion(text: string): ReleaseVersion | undefined {
  if (text.length > MAX_VERSION_LENGTH) return undefined;
  const match = PATTERN.exec(text);
  if (!match) return undefined;
  const version: ReleaseVersion = {
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3]),
  };
  if (match[4] !== undefined) version.prerelease = match[4];
  return version;
}

/** Semantic version precedence: negative when a < b. Build metadata does not count. */
export function compareVersions(a: ReleaseVersion, b: ReleaseVersion): number {
  return (
    a.major - b.major ||
    a.minor - b.minor ||
    a.patch - b.patch ||
    comparePrerelease(a.prerelease, b.prerelease)
  );
}

/** A version with a prerelease comes before the same version without one. */
function comparePrerelease(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  const x = a.split('.');
  const y = b.split('.');
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const p = x[i];
    const q = y[i];
    if (p === undefined) return -1;
    if (q === undefined) return 1;
    if (p === q) continue;
    const numeric = /^\d+$/.test(p) && /^\d+$/.test(q);
    if (numeric) return Number(p) - Number(q);
    if (/^\d+$/.test(p)) return -1;
    if (/^\d+$/.test(q)) return 1;
    return p < q ? -1 : 1;
  }
  return 0;
}

/** `0.2` of 0.2.1-dev: the release line, as the skew policy counts them. */
export function minorLine(version: ReleaseVersion): string {
  return `${version.major}.${version.minor}`;
}

export function formatVersion(version: ReleaseVersion): string {
  const core = `${version.major}.${version.minor}.${version.patch}`;
  return version.prerelease === undefined ? core : `${core}-${version.prerelease}`;
}
