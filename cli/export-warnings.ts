import type { EntryRecord } from '../lib/domain/entry-record.ts';
import type { StoredGroup } from '../lib/domain/registry-records.ts';
import type { Problem } from '../lib/projection/desired.ts';
import { LINKERD_ANNOTATIONS } from '../lib/projection/desired-linkerd.ts';

/**
 * What `export` says about the objects it left out, summarised: one line per WorkloadGroup
 * whose entries all miss the same meshTLS annotations (an operator fixes the group once, not
 * each of its 500 entries), one line for the hand-made entries (they have no group to
 * annotate: each one carries the annotations itself), the example annotations once, and
 * every other problem as it was reported.
 */
export function exportWarnings(
  problems: readonly Problem[],
  entries: readonly EntryRecord[],
  groups: readonly StoredGroup[],
): string[] {
  const records = new Map(entries.map((r) => [refKey(r.entry.metadata), r]));
  const annotationsOf = new Map(
    groups.map(({ group }) => [refKey(group.metadata), group.metadata.annotations ?? {}]),
  );
  const byGroup = new Map<string, string[]>();
  const handMade: string[] = [];
  const lines: string[] = [];
  for (const problem of problems) {
    const key = refKey(problem);
    const record = records.get(key);
    const groupKey =
      record?.autoRegistrationGroup && `${problem.namespace}/${record.autoRegistrationGroup}`;
    const source = groupKey
      ? annotationsOf.get(groupKey)
      : (record?.entry.metadata.annotations ?? {});
    if (record && source && missingAnnotations(source).length > 0) {
      if (groupKey) byGroup.set(groupKey, [...(byGroup.get(groupKey) ?? []), key]);
      else handMade.push(key);
      continue;
    }
    lines.push(`warning: ${problem.kind} ${key} left out: ${problem.message}`);
  }
  const names = listAnnotations();
  for (const [group, left] of byGroup) {
    const missing = missingAnnotations(annotationsOf.get(group) ?? {});
    lines.push(
      `warning: ${count(left.length, 'entry', 'entries')} of WorkloadGroup ${group} left out: the group has no ${missing.map((k) => `'${k}'`).join(' or ')} annotation; annotate the group once (below) and export again`,
    );
  }
  if (handMade.length > 0) {
    lines.push(
      `warning: ${count(handMade.length, 'hand-made entry', 'hand-made entries')} left out (${sample(handMade)}): an entry without a group carries ${names} in its own metadata.annotations; add them to its YAML and registrar apply it again`,
    );
  }
  if (byGroup.size > 0 || handMade.length > 0) {
    lines.push(
      `hint: linkerd's ExternalWorkloads need meshTLS identity and serverName; for example:\n` +
        '  metadata:\n    annotations:\n' +
        `      ${LINKERD_ANNOTATIONS.identity}: spiffe://root.linkerd.cluster.local/{namespace}/{serviceAccount}\n` +
        `      ${LINKERD_ANNOTATIONS.serverName}: "{name}.{namespace}.external.identity.linkerd.cluster.local"`,
    );
  }
  return lines;
}

function missingAnnotations(annotations: Record<string, string>): string[] {
  return [LINKERD_ANNOTATIONS.identity, LINKERD_ANNOTATIONS.serverName].filter(
    (k) => !annotations[k],
  );
}

function listAnnotations(): string {
  return `'${LINKERD_ANNOTATIONS.identity}' and '${LINKERD_ANNOTATIONS.serverName}'`;
}

function refKey(ref: { namespace: string; name: string }): string {
  return `${ref.namespace}/${ref.name}`;
}

function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The first few names, and how many more. */
function sample(names: readonly string[], shown = 3): string {
  const head = names.slice(0, shown).join(', ');
  return names.length > shown ? `${head} and ${names.length - shown} more` : head;
}
