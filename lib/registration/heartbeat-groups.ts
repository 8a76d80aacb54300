import { DEFAULT_HEARTBEAT, type Heartbeat, silenceBoundMs } from '../domain/heartbeat.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { HeartbeatGroupStore, HeartbeatGroups } from './heartbeat-store.ts';

/** What listing the heartbeat groups reads and keeps: every call required (none is optional). */
type GroupListing = Pick<
  HeartbeatGroupStore,
  'heartbeatGroups' | 'saveHeartbeatGroups' | 'groupHeartbeats' | 'heartbeatChanges'
>;

/** A group's heartbeat as the sweeper applies it, and since when (see holderHeartbeat). */
export interface GroupHeartbeat {
  heartbeat: Heartbeat;
  since: EpochMillis;
  /**
   * When the group stopped setting a heartbeat (its annotations removed, or the group
   * deleted): it is still checked, at the pace its holders' told bounds need, until no
   * connection can still be held to the old setting (see loadHeartbeatGroups).
   */
  dropped?: EpochMillis;
}

/** `<namespace>/<name>`: the key of a group in the sweeper's record. */
export function groupKeyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/**
 * The groups that set a heartbeat, from the sweeper's record; listed again (the namespace
 * index and a Query per namespace) once the record is `relistAfterMs` old (the sweeper: one
 * sweep interval, so a run lists them once however often it is invoked), or as soon as a
 * group's heartbeat annotations changed since the last listing (`apply` counts every such
 * change: heartbeatChanges, one GetItem). A setting first seen now, or changed, applies from
 * now on to holders the registrar recorded nothing for (`since`: a holder a release before
 * 0.3 let in keeps that release's rule). A group that dropped its setting is kept, with the
 * default, for `keepDroppedMs` (the gateway's longest connection: by then every connection
 * told its old setting has closed) so its holders are still checked at the pace their told
 * bound needs and told the change; then forgotten.
 */
export async function loadHeartbeatGroups(
  store: GroupListing,
  now: EpochMillis,
  relistAfterMs: number,
  dryRun: boolean,
  keepDroppedMs = 0,
): Promise<Map<string, GroupHeartbeat>> {
  return (await loadWithChanges(store, now, relistAfterMs, dryRun, keepDroppedMs)).groups;
}

/** loadHeartbeatGroups, and the change count the groups are listed as of. */
export async function loadWithChanges(
  store: GroupListing,
  now: EpochMillis,
  relistAfterMs: number,
  dryRun: boolean,
  keepDroppedMs = 0,
): Promise<{ groups: Map<string, GroupHeartbeat>; changes: number }> {
  const [recorded, changes] = await Promise.all([
    store.heartbeatGroups(),
    store.heartbeatChanges(),
  ]);
  let state = recorded;
  if (
    !state ||
    now - state.listedAt >= relistAfterMs ||
    now < state.listedAt ||
    changes > (state.changes ?? 0)
  ) {
    const listed = await store.groupHeartbeats();
    const groups: HeartbeatGroups['groups'] = {};
    for (const { group, heartbeat } of listed) {
      const key = groupKeyOf(group.namespace, group.name);
      const before = state?.groups[key];
      const same =
        before?.dropped === undefined &&
        before?.intervalMs === heartbeat.intervalMs &&
        before.misses === heartbeat.misses;
      groups[key] = { ...heartbeat, since: same && before ? before.since : now };
    }
    for (const [key, before] of Object.entries(state?.groups ?? {})) {
      if (groups[key]) continue;
      const dropped = before.dropped ?? now;
      if (now - dropped < keepDroppedMs)
        groups[key] = { ...DEFAULT_HEARTBEAT, since: dropped, dropped };
    }
    // Written only when a setting came, changed or went: a run that finds the same groups
    // writes nothing (the sweeper lists them every run anyway).
    const changed = JSON.stringify(groups) !== JSON.stringify(state?.groups ?? {});
    state = { listedAt: now, groups, changes };
    if ((changed || changes !== (recorded?.changes ?? 0)) && !dryRun) {
      await store.saveHeartbeatGroups(state);
    }
  }
  return { groups: asMap(state), changes: Math.max(changes, state.changes ?? 0) };
}

/**
 * Lane 0 between its passes: the groups again when `apply` changed a heartbeat since they were
 * listed (one GetItem of the change count), else undefined. A group applied while a run makes
 * its passes is checked from the next pass, not the next run.
 */
export function groupsRefresher(
  store: GroupListing,
  listedAs: number,
  dryRun: boolean,
  keepDroppedMs: number,
): (now: EpochMillis) => Promise<Map<string, GroupHeartbeat> | undefined> {
  let seen = listedAs;
  return async (now) => {
    const changes = await store.heartbeatChanges();
    if (changes <= seen) return undefined;
    // Listed again at once (relistAfterMs 0): the change count says the record is behind.
    const listed = await loadWithChanges(store, now, 0, dryRun, keepDroppedMs);
    seen = listed.changes;
    return listed.groups;
  };
}

/**
 * Lanes 1..n-1 between passes: lane 0's record again, when lane 0 listed the groups since
 * (one GetItem a pass): a group lane 0 learned of mid-run reaches the lanes at their next pass.
 */
export function recordRefresher(
  store: GroupListing,
  listedAt: EpochMillis | undefined,
): () => Promise<Map<string, GroupHeartbeat> | undefined> {
  let seen = listedAt;
  return async () => {
    const state = await store.heartbeatGroups();
    if (!state || state.listedAt === seen) return undefined;
    seen = state.listedAt;
    return asMap(state);
  };
}

/**
 * The groups as lane 0 last recorded them, never listed again here: heartbeat lanes 1..n-1
 * follow lane 0's record (a lane listing too would race it for the record's `since`).
 */
export async function recordedHeartbeatGroups(
  store: GroupListing,
): Promise<Map<string, GroupHeartbeat>> {
  return (await recordedWithTime(store)).groups;
}

/** recordedHeartbeatGroups, and when lane 0 listed them. */
export async function recordedWithTime(
  store: GroupListing,
): Promise<{ groups: Map<string, GroupHeartbeat>; listedAt?: EpochMillis }> {
  const state = await store.heartbeatGroups();
  return state ? { groups: asMap(state), listedAt: state.listedAt } : { groups: new Map() };
}

function asMap(state: HeartbeatGroups): Map<string, GroupHeartbeat> {
  return new Map(
    Object.entries(state.groups).map(([key, { intervalMs, misses, since, dropped }]) => [
      key,
      { heartbeat: { intervalMs, misses }, since, ...(dropped === undefined ? {} : { dropped }) },
    ]),
  );
}

/** The shortest silence bound among the groups, or undefined when none sets a heartbeat. */
export function shortestBoundMs(groups: ReadonlyMap<string, GroupHeartbeat>): number | undefined {
  let shortest: number | undefined;
  for (const { heartbeat } of groups.values()) {
    const bound = silenceBoundMs(heartbeat);
    shortest = shortest === undefined ? bound : Math.min(shortest, bound);
  }
  return shortest;
}
