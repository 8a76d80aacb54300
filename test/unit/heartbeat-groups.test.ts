import { describe, expect, it } from 'vitest';
import type { Heartbeat } from '../../lib/domain/heartbeat.ts';
import type { ObjectRef } from '../../lib/domain/model.ts';
import { loadHeartbeatGroups } from '../../lib/registration/heartbeat-groups.ts';
import type { HeartbeatGroups } from '../../lib/registration/heartbeat-store.ts';

const T0 = Date.UTC(2026, 2, 1, 12);
const MINUTE = 60_000;

/** The sweeper's record and the groups' annotations, in memory. */
function fakeStore(listed: { group: ObjectRef; heartbeat: Heartbeat }[]) {
  const saved: HeartbeatGroups[] = [];
  let record: HeartbeatGroups | undefined;
  return {
    saved,
    listed,
    store: {
      heartbeatGroups: async () => record,
      saveHeartbeatGroups: async (state: HeartbeatGroups) => {
        saved.push(state);
        record = state;
      },
      groupHeartbeats: async () => listed,
      // No `apply` counted: the groups are listed again on the relist interval alone.
      heartbeatChanges: async () => 0,
    },
  };
}

const web = { namespace: 'shop', name: 'web' };

describe("the sweeper's record of heartbeat groups", () => {
  it('applies a setting from the run that first saw it, and keeps that time while it is unchanged', async () => {
    const bed = fakeStore([{ group: web, heartbeat: { intervalMs: 10_000, misses: 3 } }]);
    const first = await loadHeartbeatGroups(bed.store, T0, MINUTE, false);
    const later = await loadHeartbeatGroups(bed.store, T0 + 5 * MINUTE, MINUTE, false);

    expect(first.get('shop/web')).toEqual({
      heartbeat: { intervalMs: 10_000, misses: 3 },
      since: T0,
    });
    expect(later.get('shop/web')?.since).toBe(T0);
    // Written once: a run that finds the same groups writes nothing.
    expect(bed.saved).toHaveLength(1);
  });

  it('applies a changed setting only from the run that saw the change (older holders keep the default)', async () => {
    const bed = fakeStore([{ group: web, heartbeat: { intervalMs: 10_000, misses: 3 } }]);
    await loadHeartbeatGroups(bed.store, T0, MINUTE, false);
    bed.listed[0] = { group: web, heartbeat: { intervalMs: 5_000, misses: 2 } };

    const changed = await loadHeartbeatGroups(bed.store, T0 + 2 * MINUTE, MINUTE, false);

    expect(changed.get('shop/web')).toEqual({
      heartbeat: { intervalMs: 5_000, misses: 2 },
      since: T0 + 2 * MINUTE,
    });
    expect(bed.saved).toHaveLength(2);
  });

  it('forgets a group that dropped its setting, and writes nothing in a dry run', async () => {
    const bed = fakeStore([{ group: web, heartbeat: { intervalMs: 10_000, misses: 3 } }]);
    await loadHeartbeatGroups(bed.store, T0, MINUTE, false);
    bed.listed.length = 0;

    expect((await loadHeartbeatGroups(bed.store, T0 + MINUTE, MINUTE, true)).size).toBe(0);
    expect(bed.saved).toHaveLength(1);
    expect((await loadHeartbeatGroups(bed.store, T0 + MINUTE, MINUTE, false)).size).toBe(0);
    expect(bed.saved).toHaveLength(2);
  });
});
