import type { EntryRecord } from '../domain/entry-record.ts';
import { type ApplyContext, applyActions } from './apply.ts';
import {
  desiredEndpointGroups,
  entryLabels,
  matchesSelector,
  selectsEntries,
} from './desired-endpoints.ts';
import type { Action } from './diff.ts';
import {
  MANAGED_SELECTOR,
  SERVICE_NAME_LABEL,
  SLICE_MANAGED_BY_LABEL,
  SLICE_MANAGER,
} from './kinds.ts';
import type { EndpointSliceObject, ServiceObject } from './objects.ts';
import { planServiceSlices } from './slice-packing.ts';

export interface SliceScope {
  /** Undefined: every namespace. */
  namespace: string | undefined;
  entries: readonly EntryRecord[];
  /** Fast path: only Services that select these entries now, or hold them in a slice. */
  changedEntries: readonly string[] | undefined;
  attempts: number;
}

/**
 * EndpointSlices for every Service that selects registry entries. Per pass: list Services and
 * our slices, plan each affected Service, write creates, then updates, then deletes (the
 * controller's order: an endpoint moving between slices is never missing from all of them).
 */
export async function reconcileSlices(ctx: ApplyContext, scope: SliceScope): Promise<void> {
  const entriesByNamespace = new Map<string, EntryRecord[]>();
  for (const record of scope.entries) {
    const ns = record.entry.metadata.namespace;
    entriesByNamespace.set(ns, [...(entriesByNamespace.get(ns) ?? []), record]);
  }
  const changed = scope.changedEntries ? new Set(scope.changedEntries) : undefined;
  for (let attempt = 1; attempt <= scope.attempts; attempt += 1) {
    const services = (await ctx.cluster.list('Service', {
      namespace: scope.namespace,
    })) as ServiceObject[];
    const slices = (
      (await ctx.cluster.list('EndpointSlice', {
        namespace: scope.namespace,
        labelSelector: MANAGED_SELECTOR,
      })) as EndpointSliceObject[]
    ).filter((slice) => slice.metadata.labels?.[SLICE_MANAGED_BY_LABEL] === SLICE_MANAGER);

    const servicesByKey = new Map(
      services.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]),
    );
    const slicesByKey = new Map<string, EndpointSliceObject[]>();
    const takenByNamespace = new Map<string, Set<string>>();
    for (const slice of slices) {
      const key = `${slice.metadata.namespace}/${slice.metadata.labels?.[SERVICE_NAME_LABEL] ?? ''}`;
      slicesByKey.set(key, [...(slicesByKey.get(key) ?? []), slice]);
      taken(takenByNamespace, slice.metadata.namespace).add(slice.metadata.name);
    }
    for (const key of ctx.unmanaged) {
      const [kind, ns, name] = key.split('/');
      if (kind === 'EndpointSlice' && ns !== undefined && name !== undefined)
        taken(takenByNamespace, ns).add(name);
    }

    const creates: Action[] = [];
    const updates: Action[] = [];
    const deletes: Action[] = [];
    const keys = new Set([
      ...[...servicesByKey].filter(([, service]) => selectsEntries(service)).map(([key]) => key),
      ...slicesByKey.keys(),
    ]);
    for (const key of [...keys].sort()) {
      const [namespace = '', serviceName = ''] = splitKey(key);
      const found = servicesByKey.get(key);
      const service = found && selectsEntries(found) ? found : undefined;
      const existing = slicesByKey.get(key) ?? [];
      const entries = entriesByNamespace.get(namespace) ?? [];
      if (changed && !affected(service, existing, entries, changed)) continue;
      const plan = planServiceSlices({
        namespace,
        serviceName,
        service,
        groups: service ? desiredEndpointGroups(service, entries) : [],
        existing,
        takenNames: taken(takenByNamespace, namespace),
      });
      for (const slice of plan.create) {
        taken(takenByNamespace, namespace).add(slice.metadata.name);
        creates.push({ type: 'create', kind: 'EndpointSlice', object: slice });
      }
      for (const slice of plan.update)
        updates.push({ type: 'replace', kind: 'EndpointSlice', object: slice });
      for (const slice of plan.delete)
        deletes.push({ type: 'delete', kind: 'EndpointSlice', object: slice });
    }
    let conflicted = false;
    for (const phase of [creates, updates, deletes]) {
      if ((await applyActions(phase, ctx)) === 'conflict') conflicted = true;
    }
    if (!conflicted) return;
  }
  throw new Error(
    `gave up after ${scope.attempts} passes: EndpointSlices kept changing while being written`,
  );
}

/** Whether a change to these entries can change this Service's slices. */
function affected(
  service: ServiceObject | undefined,
  existing: readonly EndpointSliceObject[],
  entries: readonly EntryRecord[],
  changed: ReadonlySet<string>,
): boolean {
  // Slices of a Service that is gone or stopped selecting: always cleaned up.
  if (!service) return true;
  const selector = service.spec.selector ?? {};
  const selectsChanged = entries.some(
    (record) =>
      changed.has(record.entry.metadata.name) && matchesSelector(selector, entryLabels(record)),
  );
  // An entry deleted, or relabelled away from the selector, is only found in the slices.
  const holdsChanged = existing.some((slice) =>
    (slice.endpoints ?? []).some(
      (endpoint) => endpoint.targetRef && changed.has(endpoint.targetRef.name),
    ),
  );
  return selectsChanged || holdsChanged;
}

function taken(byNamespace: Map<string, Set<string>>, namespace: string): Set<string> {
  let names = byNamespace.get(namespace);
  if (!names) {
    names = new Set();
    byNamespace.set(namespace, names);
  }
  return names;
}

function splitKey(key: string): [string, string] {
  const at = key.indexOf('/');
  return [key.slice(0, at), key.slice(at + 1)];
}
