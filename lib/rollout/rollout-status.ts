import type { StoredGroup } from '../domain/registry-records.ts';
import { isOnCurrentTemplate } from '../domain/template-rollout.ts';
import { paceOf } from './rollout-pace.ts';
import type { RolloutEntry, RolloutRecord } from './rollout-store.ts';

/** `registrar rollout status`: the record as the runs left it, and the entries as they are now. */
export interface RolloutStatus {
  group: { namespace: string; name: string };
  generation: number;
  pace: string;
  /** The group's auto-registered entries. */
  entries: number;
  /** On the current generation (written by a rollout, or created since the change). */
  updated: number;
  /** On the current template in every respect, identity included (`get wg`'s UP-TO-DATE). */
  upToDate: number;
  /** On an older generation, knowing their agent's labels: the rollout brings them along. */
  pending: number;
  /** On an older generation of an earlier release: updated after their agent's next connect. */
  waiting: number;
  /** On the current generation but keeping an older service account or network. */
  olderIdentity: number;
  paused: boolean;
  /** When the last pass found nothing left it could update (this generation). */
  completedAt?: string;
  startedAt?: string;
  state: 'complete' | 'progressing' | 'paused';
}

export function rolloutStatus(
  stored: StoredGroup,
  record: RolloutRecord | undefined,
  entries: readonly RolloutEntry[],
): RolloutStatus {
  const generation = stored.generation;
  let updated = 0;
  let upToDate = 0;
  let pending = 0;
  let waiting = 0;
  for (const entry of entries) {
    if ((entry.groupGeneration ?? 0) >= generation) {
      updated += 1;
      if (isOnCurrentTemplate(entry, stored.group, generation)) upToDate += 1;
    } else if (entry.agentGiven) pending += 1;
    else waiting += 1;
  }
  const paused = record?.pausedAt !== undefined;
  const state = pending + waiting === 0 ? 'complete' : paused ? 'paused' : 'progressing';
  const status: RolloutStatus = {
    group: { namespace: stored.group.metadata.namespace, name: stored.group.metadata.name },
    generation,
    pace: paceOf(stored.group).pace.text,
    entries: entries.length,
    updated,
    upToDate,
    pending,
    waiting,
    olderIdentity: updated - upToDate,
    paused,
    state,
  };
  if (record?.generation === generation) {
    if (record.startedAt !== undefined) status.startedAt = new Date(record.startedAt).toISOString();
    if (record.completedAt !== undefined) {
      status.completedAt = new Date(record.completedAt).toISOString();
    }
  }
  return status;
}

/** kubectl-like lines: what is rolled out, what is left, and what to do about it. */
export function describeRolloutStatus(status: RolloutStatus): string[] {
  const { namespace, name } = status.group;
  const group = `workloadgroup "${name}"`;
  const lines: string[] = [];
  if (status.state === 'complete') {
    lines.push(
      `${group} successfully rolled out: ${status.updated} of ${status.entries} ${status.entries === 1 ? 'entry' : 'entries'} on generation ${status.generation}`,
    );
  } else if (status.state === 'paused') {
    lines.push(
      `rollout of ${group} to generation ${status.generation} is paused: ${status.updated} of ${status.entries} ${status.entries === 1 ? 'entry' : 'entries'} updated; resume with registrar rollout resume wg/${name} -n ${namespace}`,
    );
  } else {
    lines.push(
      `waiting for rollout of ${group} to generation ${status.generation} to finish: ${status.updated} of ${status.entries} ${status.entries === 1 ? 'entry' : 'entries'} updated (pace ${status.pace})`,
    );
  }
  if (status.waiting > 0) {
    lines.push(
      `${status.waiting} entr${status.waiting === 1 ? 'y' : 'ies'} of an earlier release wait for their agent's next connect (within 2h) to learn which labels it gave, then follow`,
    );
  }
  if (status.olderIdentity > 0) {
    lines.push(
      `${status.olderIdentity} entr${status.olderIdentity === 1 ? 'y keeps' : 'ies keep'} an older service account or network (a rollout never changes identity): they take the template's when they register again`,
    );
  }
  if (status.paused && status.state === 'complete') {
    lines.push(
      `rollouts of ${group} are paused: the next template change waits for registrar rollout resume wg/${name} -n ${namespace}`,
    );
  }
  return lines;
}
