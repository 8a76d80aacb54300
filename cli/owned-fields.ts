/**
 * Which fields of an object an operator's `label`, `annotate`, `patch` or `edit` may change.
 * The registrar owns the rest: an object's identity and bookkeeping (kubectl's API server
 * refuses or ignores the same), and the whole of an auto-registered WorkloadEntry, which is
 * built from its WorkloadGroup and its VM (DESIGN rules 5 and 6): change the group instead.
 */

/** Set by the registrar on every object: never changed by hand. */
const SYSTEM_PATHS = [
  'apiVersion',
  'kind',
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'metadata.generation',
  'metadata.creationTimestamp',
  'metadata.resourceVersion',
  'metadata.ownerReferences',
] as const;

/**
 * The first field the registrar owns that differs between `before` and `after`, as a dotted
 * path (`metadata.uid`, `spec.address`); undefined when the change is the operator's to make.
 */
export function ownedFieldChanged(
  before: unknown,
  after: unknown,
  autoRegistered: boolean,
): string | undefined {
  for (const path of SYSTEM_PATHS) {
    const changed = firstDifference(at(before, path), at(after, path), path);
    if (changed !== undefined) return changed;
  }
  if (autoRegistered) return firstDifference(before, after, '');
  return undefined;
}

/** The dotted path of the first leaf that differs (keys in sorted order); undefined if equal. */
export function firstDifference(a: unknown, b: unknown, path: string): string | undefined {
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const key of keys) {
      const found = firstDifference(a[key], b[key], path === '' ? key : `${path}.${key}`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    for (let i = 0; i < a.length; i++) {
      const found = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  return JSON.stringify(a) === JSON.stringify(b) ? undefined : path || '(the object)';
}

function at(value: unknown, path: string): unknown {
  let node = value;
  for (const key of path.split('.')) node = isObject(node) ? node[key] : undefined;
  return node;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
