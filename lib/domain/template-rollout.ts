import type { AgentGiven } from './agent-given.ts';
import { mergeLabels, withoutSystemAnnotations } from './build-entry.ts';
import { entryName } from './entry-name.ts';
import type { WorkloadEntry, WorkloadEntrySpec, WorkloadGroup } from './model.ts';

/**
 * The entry rebuilt from the group's current template, keeping everything that belongs to the
 * VM: its name, address, creation time, and the fields that make its identity (service
 * account, network), which a rollout never changes under a running VM (istiod keys a proxy's
 * certificate and its network gateway on them; they change only when the VM registers again).
 * Labels merge as at registration: template, then the group's `spec.metadata`, then the agent's.
 */
export function rolledOutEntry(
  entry: WorkloadEntry,
  group: WorkloadGroup,
  given: AgentGiven,
): WorkloadEntry {
  const template = group.spec.template;
  const labels = mergeLabels(template.labels, group.spec.metadata?.labels, given.labels);
  const spec: WorkloadEntrySpec = {};
  if (entry.spec.address !== undefined) spec.address = entry.spec.address;
  if (template.ports !== undefined) spec.ports = { ...template.ports };
  spec.labels = labels;
  if (entry.spec.network !== undefined) spec.network = entry.spec.network;
  const locality = given.locality ?? template.locality;
  if (locality !== undefined) spec.locality = locality;
  if (template.weight !== undefined) spec.weight = template.weight;
  if (entry.spec.serviceAccount !== undefined) spec.serviceAccount = entry.spec.serviceAccount;
  const metadata = { ...entry.metadata, labels: { ...labels } };
  metadata.annotations = withoutSystemAnnotations(group.spec.metadata?.annotations);
  const owner = entry.metadata.ownerReferences?.[0];
  if (owner?.kind === 'WorkloadGroup' && owner.name === group.metadata.name) {
    metadata.ownerReferences = [
      { ...owner, apiVersion: group.apiVersion, uid: group.metadata.uid ?? owner.uid },
    ];
  }
  return { ...entry, metadata, spec };
}

/** What a rollout changed in an entry, for its event: `labels`, `ports`, ... (none: `[]`). */
export function templateChanges(before: WorkloadEntry, after: WorkloadEntry): string[] {
  const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  const changed: string[] = [];
  if (!same(sorted(before.metadata.labels), sorted(after.metadata.labels))) changed.push('labels');
  if (!same(sorted(before.metadata.annotations), sorted(after.metadata.annotations))) {
    changed.push('annotations');
  }
  if (!same(sorted(before.spec.ports), sorted(after.spec.ports))) changed.push('ports');
  if (!same(before.spec.weight, after.spec.weight)) changed.push('weight');
  if (!same(before.spec.locality, after.spec.locality)) changed.push('locality');
  return changed;
}

function sorted(map: Record<string, unknown> | undefined): [string, unknown][] | undefined {
  if (map === undefined || Object.keys(map).length === 0) return undefined;
  return Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** A template field a rollout does not apply to live entries, and how it changed. */
export interface IdentityChange {
  field: 'serviceAccount' | 'network';
  from: string | undefined;
  to: string | undefined;
}

/**
 * The changes between two templates that would change a live entry's identity or name: its
 * service account (the mesh identity of its certificate) and its network (part of its name and
 * of how the mesh reaches it). `""` is unset, as in Kubernetes.
 */
export function identityChanges(
  before: WorkloadGroup | undefined,
  after: WorkloadGroup,
): IdentityChange[] {
  if (!before) return [];
  const changes: IdentityChange[] = [];
  for (const field of ['serviceAccount', 'network'] as const) {
    const from = before.spec.template[field] || undefined;
    const to = after.spec.template[field] || undefined;
    if (from !== to) changes.push({ field, from, to });
  }
  return changes;
}

/** What a group's entries know of its templates: enough to count the ones on an older one. */
export interface EntryTemplateView {
  groupGeneration?: number;
  entry: WorkloadEntry;
}

/**
 * Whether an entry is on its group's current template: built from (or rolled out to) the
 * current generation, and with the identity the template gives today. An entry whose service
 * account, or whose template-given network, differs stays on the older template until it
 * registers again (a rollout does not change identity).
 */
export function isOnCurrentTemplate(
  view: EntryTemplateView,
  group: WorkloadGroup,
  generation: number,
): boolean {
  if (view.groupGeneration === undefined || view.groupGeneration < generation) return false;
  const template = group.spec.template;
  const { spec, metadata } = view.entry;
  if ((spec.serviceAccount || undefined) !== (template.serviceAccount || undefined)) return false;
  // A network the agent named is part of the entry's name (entry-name.ts); one the template
  // gave is not, and it must be the template's network still.
  const agentNamedNetwork =
    spec.network !== undefined &&
    metadata.name !== entryName(group.metadata.name, spec.address ?? '');
  if (agentNamedNetwork) return true;
  return (spec.network || undefined) === (template.network || undefined);
}
