import { type Heartbeat, silenceBoundMs } from '../domain/heartbeat.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { HeartbeatGroups, HeartbeatStore } from '../store/registry-store.ts';

/** A group's heartbeat as the sweeper applies it, and since when (see holderHeartbeat). */
export interface GroupHeartbeat {
  heartbeat: Heartbeat;
  since: EpochMillis;
}

/** `<namespace>/<name>`: the key of a group in the sweeper's record. */
export function groupKeyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/**
 * The groups that set a heartbeat, from the sweeper's record; listed again (the namespace
 * index and a Query per namespace) once the record is `relistAfterMs` old (the sweeper: one
 * sweep interval, so a run lists them once however often it is invoked). A setting first seen now, or changed, applies from now on:
 * `since` is when this run saw it, later than any `describe` that could not yet name it. A
 * group that dropped its setting is forgotten. Without a store (an older store, a test's
 * fake), none: every holder keeps the default.
 */
export async function loadHeartbeatGroups(
  store: Partial<HeartbeatStore>,
  now: EpochMillis,
  relistAfterMs: number,
  dryRun: boolean,
): Promise<Map<string, GroupHeartbeat>> {
  if (!store.heartbeatGroups || !store.groupHeartbeats) return new Map();
  let state = await store.heartbeatGroups();
  if (!state || now - state.listedAt >= relistAfterMs || now < state.listedAt) {
    const listed = await store.groupHeartbeats();
    const groups: HeartbeatGroups['groups'] = {};
    for (const { group, heartbeat } of listed) {
      const key = groupKeyOf(group.namespace, group.name);
      const before = state?.groups[key];
      const same =
        before?.intervalMs === heartbeat.intervalMs && before.misses === heartbeat.misses;
      groups[key] = { ...heartbeat, since: same && before ? before.since : now };
    }
    // Written only when a setting came, changed or went: a run that finds the same groups
    // writes nothing (the sweeper lists them every run anyway).
    const changed = JSON.stringify(groups) !== JSON.stringify(state?.groups ?? {});
    state = { listedAt: now, groups };
    if (changed && !dryRun) await store.saveHeartbeatGroups?.(state);
  }
  return asMap(state);
}

/**
 * The groups as lane 0 last recorded them, never listed again here: heartbeat lanes 1..n-1
 * follow lane 0's record (a lane listing too would race it for the record's `since`).
 */
export async function recordedHeartbeatGroups(
  store: Partial<HeartbeatStore>,
): Promise<Map<string, GroupHeartbeat>> {
  const state = await store.heartbeatGroups?.();
  return state ? asMap(state) : new Map();
}

function asMap(state: HeartbeatGroups): Map<string, GroupHeartbeat> {
  return new Map(
    Object.entries(state.groups).map(([key, { intervalMs, misses, since }]) => [
      key,
      { heartbeat: { intervalMs, misses }, since },
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
