import type { ObjectRef } from '../domain/model.ts';
import type { StoredGroup } from '../domain/registry-records.ts';
import { toYaml } from '../presentation/output.ts';
import { renderGroup } from '../presentation/resource-items.ts';
import { rolloutStatus } from '../rollout/rollout-status.ts';
import type { RolloutEntry, RolloutRecord, RolloutStore } from '../rollout/rollout-store.ts';
import type { GroupResponse } from './api-types.ts';

/** What the group and rollout pages read: the reads `registrar rollout status` makes. */
export type GroupReads = Pick<RolloutStore, 'getGroup' | 'getRollout' | 'groupEntries'>;

/** A group and its rollout, read now; undefined when there is no such group. */
export async function readGroup(
  reads: GroupReads,
  ref: ObjectRef,
  now: number,
): Promise<GroupResponse | undefined> {
  const stored = await reads.getGroup(ref);
  if (!stored) return undefined;
  const [record, entries] = await Promise.all([reads.getRollout(ref), reads.groupEntries(ref)]);
  return groupDetail(stored, record, entries, now);
}

export function groupDetail(
  stored: StoredGroup,
  record: RolloutRecord | undefined,
  entries: readonly RolloutEntry[],
  readAt: number,
): GroupResponse {
  const group = renderGroup(stored);
  const status = rolloutStatus(stored, record, entries);
  const { template, probe } = group.spec;
  return {
    namespace: group.metadata.namespace,
    name: group.metadata.name,
    generation: stored.generation,
    serviceAccount: template.serviceAccount || '<none>',
    network: template.network || '<none>',
    probe: probe
      ? (['httpGet', 'tcpSocket', 'exec'].find((kind) => kind in probe) ?? '<none>')
      : '<none>',
    // Istio's order, whatever order the store kept the attributes in (DynamoDB does not keep
    // a map's order: the page once opened on `metadata:`).
    yaml: toYaml({
      apiVersion: group.apiVersion,
      kind: group.kind,
      metadata: group.metadata,
      spec: group.spec,
    }),
    rollout: {
      generation: status.generation,
      pace: status.pace,
      entries: status.entries,
      updated: status.updated,
      upToDate: status.upToDate,
      pending: status.pending,
      waiting: status.waiting,
      olderIdentity: status.olderIdentity,
      paused: status.paused,
      completedAt: status.completedAt ?? null,
      startedAt: status.startedAt ?? null,
      state: status.state,
    },
    readAt,
  };
}
