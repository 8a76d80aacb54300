import type { NamespaceScope, ReconcileScope } from './projector.ts';

/**
 * The keys of a DynamoDB stream record, as Lambda delivers them (attribute-value form).
 * Only the keys are read: the registry item layout (docs/architecture.md) says which
 * namespace and object changed, and the projector reads current state itself.
 */
export interface StreamRecordKeys {
  dynamodb?: { Keys?: Record<string, { S?: string } | undefined> };
}

const NAMESPACE_PREFIX = 'NS#';
const ENTRY_PREFIX = 'WE#';
const GROUP_PREFIX = 'WG#';

/**
 * The namespaces a batch touched, and in each the entries that changed. A group change
 * (template labels, Linkerd annotations) can affect any Service of its namespace, so it widens
 * that namespace to all of them. Items outside namespaces (connections, tokens) need no work.
 */
export function scopeOfStream(records: readonly StreamRecordKeys[]): ReconcileScope {
  const byNamespace = new Map<string, Set<string> | 'all'>();
  for (const record of records) {
    const pk = record.dynamodb?.Keys?.pk?.S;
    const sk = record.dynamodb?.Keys?.sk?.S;
    if (!pk?.startsWith(NAMESPACE_PREFIX) || sk === undefined) continue;
    const namespace = pk.slice(NAMESPACE_PREFIX.length);
    const current = byNamespace.get(namespace);
    if (sk.startsWith(GROUP_PREFIX)) {
      byNamespace.set(namespace, 'all');
    } else if (sk.startsWith(ENTRY_PREFIX) && current !== 'all') {
      const names = current ?? new Set<string>();
      names.add(sk.slice(ENTRY_PREFIX.length));
      byNamespace.set(namespace, names);
    }
  }
  const namespaces: NamespaceScope[] = [...byNamespace]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([namespace, names]) =>
      names === 'all' ? { namespace } : { namespace, changedEntries: [...names].sort() },
    );
  return { kind: 'namespaces', namespaces };
}
