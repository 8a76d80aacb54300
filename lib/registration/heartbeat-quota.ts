import {
  formatHeartbeat,
  HEARTBEAT_ANNOTATIONS,
  parseHeartbeat,
  silenceBoundMs,
} from '../domain/heartbeat.ts';
import {
  checksPerMinute,
  DEFAULT_HEARTBEAT_CHECKS_PER_MINUTE,
  groupPeriodMs,
} from '../domain/heartbeat-pace.ts';
import type { ObjectRef, WorkloadGroup } from '../domain/model.ts';
import { formatChecksPerMinute, type NamespaceSettings } from '../domain/namespace-settings.ts';
import type { HeartbeatStore } from './heartbeat-store.ts';

/** What `apply`'s quota check reads: the namespace's quota, its groups, each group's held VMs. */
export interface HeartbeatQuotaStore {
  getSettings(namespace: string, consistent?: boolean): Promise<NamespaceSettings | undefined>;
  listGroups(namespace: string): Promise<{ group: WorkloadGroup }[]>;
  /** The group's auto-registered entries that have a holder now (one counting Query). */
  heldEntryCount(group: ObjectRef): Promise<number>;
}

/** What the CLI reads of heartbeat groups' VMs: how many are held, and the heartbeats they keep. */
export type HeartbeatCounts = Pick<HeartbeatQuotaStore, 'heldEntryCount'> &
  Pick<HeartbeatStore, 'heldEntriesOf'>;

/** A group document of an apply, and its place in the input (for the refusal's wording). */
export interface AppliedGroup {
  index: number;
  group: WorkloadGroup;
}

/**
 * A namespace's heartbeat checks count against its quota (`registrar namespace set
 * --heartbeat-checks`, issue 44): an apply that would raise them past it is refused, naming
 * the document, the annotation and its value, before anything is written. Each heartbeat
 * group asks its held VMs x its checks a minute (lib/domain/heartbeat-pace.ts, at the
 * registrar's recorded sweep interval); the count is of the VMs held now. An apply that does
 * not raise the namespace's checks (the same setting again, a longer one) is never refused,
 * even over a quota lowered since: the sweeper paces such a namespace down to its quota.
 * VMs that connect later are not refused either: the sweeper stretches that namespace's
 * passes, never another's.
 */
export async function heartbeatQuotaRefusals(
  store: HeartbeatQuotaStore,
  applied: readonly AppliedGroup[],
  sweepIntervalMs: number,
): Promise<string[]> {
  const byNamespace = new Map<string, AppliedGroup[]>();
  for (const doc of applied) {
    const list = byNamespace.get(doc.group.metadata.namespace) ?? [];
    list.push(doc);
    byNamespace.set(doc.group.metadata.namespace, list);
  }
  const refusals: string[] = [];
  for (const [namespace, docs] of byNamespace) {
    refusals.push(...(await refusalsIn(store, namespace, docs, sweepIntervalMs)));
  }
  return refusals;
}

async function refusalsIn(
  store: HeartbeatQuotaStore,
  namespace: string,
  docs: readonly AppliedGroup[],
  sweepIntervalMs: number,
): Promise<string[]> {
  const perVm = (group: WorkloadGroup | undefined) => {
    const parsed = parseHeartbeat(group?.metadata.annotations ?? {});
    if (!('heartbeat' in parsed) || !parsed.heartbeat) return 0;
    return checksPerMinute(
      groupPeriodMs(silenceBoundMs(parsed.heartbeat), undefined, sweepIntervalMs),
    );
  };
  const raising = docs.filter((doc) => perVm(doc.group) > 0);
  if (raising.length === 0) return [];
  const [settings, stored] = await Promise.all([
    store.getSettings(namespace, true),
    store.listGroups(namespace),
  ]);
  const before = new Map(stored.map(({ group }) => [group.metadata.name, group]));
  const after = new Map(before);
  for (const doc of docs) after.set(doc.group.metadata.name, doc.group);
  const names = [...after.keys()].filter(
    (name) => perVm(after.get(name)) + perVm(before.get(name)) > 0,
  );
  // A group applied with a heartbeat counts at least one VM: a group is applied to have VMs,
  // and one VM alone may be past a small quota.
  const appliedNames = new Set(raising.map((doc) => doc.group.metadata.name));
  const held = new Map(
    await Promise.all(
      names.map(async (name) => {
        const count = await store.heldEntryCount({ namespace, name });
        return [name, appliedNames.has(name) ? Math.max(1, count) : count] as const;
      }),
    ),
  );
  const demand = (groups: Map<string, WorkloadGroup>) =>
    names.reduce((sum, name) => sum + (held.get(name) ?? 0) * perVm(groups.get(name)), 0);
  const was = demand(before);
  const will = demand(after);
  const quota = settings?.heartbeatChecks ?? DEFAULT_HEARTBEAT_CHECKS_PER_MINUTE;
  if (will <= quota || will <= was) return [];
  const which = settings?.heartbeatChecks === undefined ? ' (the default)' : '';
  return raising
    .filter((doc) => perVm(doc.group) > perVm(before.get(doc.group.metadata.name)))
    .map((doc) => {
      const { name } = doc.group.metadata;
      const annotations = doc.group.metadata.annotations ?? {};
      const setting = parseHeartbeat(annotations);
      const shown =
        'heartbeat' in setting && setting.heartbeat ? formatHeartbeat(setting.heartbeat) : '';
      const field =
        annotations[HEARTBEAT_ANNOTATIONS.interval] !== undefined
          ? HEARTBEAT_ANNOTATIONS.interval
          : HEARTBEAT_ANNOTATIONS.misses;
      return (
        `document ${doc.index} (WorkloadGroup ${name}): metadata.annotations["${field}"]: '${annotations[field]}' (${shown}) ` +
        `would make namespace '${namespace}' ask for ${will} heartbeat checks a minute (${name}: ${held.get(name) ?? 0} VMs x ${perVm(doc.group)}), ` +
        `over its quota heartbeat-checks ${formatChecksPerMinute(quota)}${which}; lengthen the heartbeat, ` +
        `or raise the quota with: registrar namespace set -n ${namespace} --heartbeat-checks ${formatChecksPerMinute(will)}`
      );
    });
}
