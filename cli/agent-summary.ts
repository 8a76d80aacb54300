import type { EntryRecord } from '../lib/domain/entry-record.ts';
import { isAutoRegistered, isConnected } from '../lib/domain/entry-record.ts';
import { compareVersions, parseReleaseVersion } from '../lib/domain/release-version.ts';
import { formatTable, toJson, toYaml } from '../lib/presentation/output.ts';
import type { CliContext } from './commands/context.ts';
import { agentVersionCell } from './commands/resources.ts';

/** What `registrar get agents` prints per namespace and agent version. */
export interface AgentVersionCount {
  namespace: string;
  /** As `get we -o wide` shows it: the version, `0.1.x` (sent none) or `<unknown>`. */
  agentVersion: string;
  entries: number;
  connected: number;
}

/** `get agents`, `get agent`: the summary is not a stored resource, so `get` answers it here. */
export function isAgentSummary(resource: string): boolean {
  return ['agents', 'agent'].includes(resource.toLowerCase());
}

/**
 * The auto-registered entries of each namespace counted by the agent version of their newest
 * connect: an operator sees when the last VM of an old version is gone (docs/operations.md,
 * "Version skew"). Hand-made entries have no agent and are left out.
 */
export function countAgentVersions(records: readonly EntryRecord[]): AgentVersionCount[] {
  const counts = new Map<string, AgentVersionCount>();
  for (const record of records) {
    if (!isAutoRegistered(record)) continue;
    const namespace = record.entry.metadata.namespace;
    const agentVersion = agentVersionCell(record);
    const key = `${namespace}\u0000${agentVersion}`;
    const count = counts.get(key) ?? { namespace, agentVersion, entries: 0, connected: 0 };
    count.entries += 1;
    if (isConnected(record)) count.connected += 1;
    counts.set(key, count);
  }
  return [...counts.values()].sort(
    (a, b) => a.namespace.localeCompare(b.namespace) || byVersion(a.agentVersion, b.agentVersion),
  );
}

/** Oldest first; `0.1.x` as 0.1.0; what is not a version (`<unknown>`) last. */
function byVersion(a: string, b: string): number {
  const x = parseReleaseVersion(a.replace(/\.x$/, '.0'));
  const y = parseReleaseVersion(b.replace(/\.x$/, '.0'));
  if (x && y) return compareVersions(x, y) || a.localeCompare(b);
  if (x || y) return x ? -1 : 1;
  return a.localeCompare(b);
}

/** Prints the counts as a table (NAMESPACE first under -A), or as a json/yaml list. */
export function printAgentSummary(
  context: CliContext,
  counts: readonly AgentVersionCount[],
  namespace: string | undefined,
  format: string,
): void {
  if (format === 'json' || format === 'yaml') {
    const value = { items: counts };
    context.out(format === 'json' ? toJson(value) : toYaml(value));
    return;
  }
  if (counts.length === 0) {
    const where = namespace === undefined ? '' : ` in ${namespace} namespace`;
    context.io.stderr.write(`No agents found${where}.\n`);
    return;
  }
  const headers = ['AGENT', 'ENTRIES', 'CONNECTED'];
  const rows = counts.map((c) => [c.agentVersion, String(c.entries), String(c.connected)]);
  context.out(
    namespace === undefined
      ? formatTable(
          ['NAMESPACE', ...headers],
          rows.map((row, i) => [counts[i]?.namespace ?? '', ...row]),
        )
      : formatTable(headers, rows),
  );
}
