import { formatVersion, parseReleaseVersion, type ReleaseVersion } from './release-version.ts';

/**
 * Which agent versions a registrar accepts (docs/operations.md, "Version skew"), after
 * Kubernetes' and Istio's policies: agents of the registrar's own minor release and of the two
 * minor releases before it, and any newer agent of the same major release (the protocol only
 * grows, so an agent upgraded before the registrar, or left newer by a rollback, still works).
 * Pure.
 */

/** A release line: the major and minor of a version. */
export interface MinorLine {
  major: number;
  minor: number;
}

/**
 * What an agent that sends no version is: every 0.1 agent (agents send their version from
 * 0.2 on). Recorded on its entry as such.
 */
export const UNVERSIONED_AGENT = '0.1.x';
const UNVERSIONED_LINE: MinorLine = { major: 0, minor: 1 };

/**
 * The last minor release of each major release that has a successor. The first two minor
 * releases of a major accept agents of the major before it (1.0 accepts 0.L-1 and 0.L), so a
 * major release adds its predecessor's last minor here (docs/contributing.md, "Releasing");
 * test/unit/agent-skew.test.ts fails for a release whose floor cannot be worked out.
 */
export const LAST_MINOR_OF_MAJOR: Readonly<Record<number, number>> = Object.freeze({});

/** How many minor releases before its own a registrar accepts. */
export const ACCEPTED_PREVIOUS_MINORS = 2;

export interface AgentSkewPolicy {
  /** The registrar's own version. */
  registrar: string;
  /** The oldest release line accepted. */
  oldest: MinorLine;
}

/**
 * The default floor: the minor line two before the registrar's own. Throws when the line
 * crosses into a major release whose last minor is not in LAST_MINOR_OF_MAJOR.
 */
export function defaultOldestAgent(registrar: ReleaseVersion): MinorLine {
  let { major, minor } = registrar;
  for (let step = 0; step < ACCEPTED_PREVIOUS_MINORS; step++) {
    if (minor > 0) {
      minor -= 1;
      continue;
    }
    if (major === 0) break; // 0.0 is the first line there is
    const last = LAST_MINOR_OF_MAJOR[major - 1];
    if (last === undefined) {
      throw new Error(
        `the agent skew floor of ${formatVersion(registrar)} needs the last minor release of major ${major - 1} in LAST_MINOR_OF_MAJOR (lib/domain/agent-skew.ts)`,
      );
    }
    major -= 1;
    minor = last;
  }
  return { major, minor };
}

/** The policy of a registrar of this version, with the operator's floor when one is set. */
export function agentSkewPolicy(registrar: string, oldest?: MinorLine): AgentSkewPolicy {
  const parsed = parseReleaseVersion(registrar);
  if (!parsed) throw new Error(`the registrar's version '${registrar}' is not a semantic version`);
  return { registrar, oldest: oldest ?? defaultOldestAgent(parsed) };
}

/** `0.2` as MinorLine; undefined when the text is not MAJOR.MINOR. */
export function parseMinorLine(text: string): MinorLine | undefined {
  const match = /^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})$/.exec(text.trim());
  return match ? { major: Number(match[1]), minor: Number(match[2]) } : undefined;
}

export function formatMinorLine(line: MinorLine): string {
  return `${line.major}.${line.minor}`;
}

/**
 * Why the registrar refuses this agent, naming both versions and what to do; undefined when
 * it is accepted. `agentVersion` is what the agent sent (already a valid semantic version), or
 * undefined for an agent that sent none (a 0.1 agent).
 */
export function agentSkewRefusal(
  agentVersion: string | undefined,
  policy: AgentSkewPolicy,
): string | undefined {
  const line = agentVersion === undefined ? UNVERSIONED_LINE : lineOf(agentVersion);
  const shown = agentVersion ?? `${UNVERSIONED_AGENT} (it sent no version)`;
  const registrar = parseReleaseVersion(policy.registrar);
  if (!line || !registrar) return undefined;
  const accepted = `agents ${formatMinorLine(policy.oldest)} to ${registrar.major}.x`;
  if (line.major > registrar.major) {
    return `agent version ${shown} is of a newer major release than registrar ${policy.registrar}, which accepts ${accepted}; upgrade the registrar first, or run an agent of ${registrar.major}.x`;
  }
  if (compareLines(line, policy.oldest) < 0) {
    return `agent version ${shown} is too old for registrar ${policy.registrar}, which accepts ${accepted} (its minor release and the ${ACCEPTED_PREVIOUS_MINORS} before it); upgrade the agent (docs/operations.md, version skew)`;
  }
  return undefined;
}

function lineOf(version: string): MinorLine | undefined {
  const parsed = parseReleaseVersion(version);
  return parsed ? { major: parsed.major, minor: parsed.minor } : undefined;
}

function compareLines(a: MinorLine, b: MinorLine): number {
  return a.major - b.major || a.minor - b.minor;
}
