import { describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../lib/domain/model.ts';
import { createGroupCache } from '../../lib/registration/group-cache.ts';
import type { StoredGroup } from '../../lib/store/registry-store.ts';

function storedGroup(name: string, generation = 1): StoredGroup {
  return {
    generation,
    group: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name, namespace: 'shop' },
      spec: { template: {} },
    },
  };
}

/** A store that counts reads and serves whatever `groups` holds at the time. */
function countingStore(groups: Map<string, StoredGroup>) {
  const reads: string[] = [];
  return {
    reads,
    getGroup: async (ref: ObjectRef) => {
      reads.push(ref.name);
      return groups.get(ref.name);
    },
  };
}

const REF = { namespace: 'shop', name: 'web' };

describe('createGroupCache', () => {
  it('reads a group once within the TTL', async () => {
    const store = countingStore(new Map([['web', storedGroup('web')]]));
    let now = 0;
    const cache = createGroupCache(store, 10_000, () => now);
    await cache.getGroup(REF);
    now = 9_999;
    await cache.getGroup(REF);
    expect(store.reads).toEqual(['web']);
  });

  it('reads again once the TTL has passed and serves the new generation', async () => {
    const groups = new Map([['web', storedGroup('web', 1)]]);
    const store = countingStore(groups);
    let now = 0;
    const cache = createGroupCache(store, 10_000, () => now);
    await cache.getGroup(REF);
    groups.set('web', storedGroup('web', 2));
    now = 10_000;
    expect((await cache.getGroup(REF))?.generation).toBe(2);
    expect(store.reads).toHaveLength(2);
  });

  it('does not remember a missing group, so apply-then-connect works at once', async () => {
    const groups = new Map<string, StoredGroup>();
    const store = countingStore(groups);
    const cache = createGroupCache(store, 10_000, () => 0);
    expect(await cache.getGroup(REF)).toBeUndefined();
    groups.set('web', storedGroup('web'));
    expect(await cache.getGroup(REF)).toBeDefined();
  });

  it('reads through every time when the TTL is zero', async () => {
    const store = countingStore(new Map([['web', storedGroup('web')]]));
    const cache = createGroupCache(store, 0, () => 0);
    await cache.getGroup(REF);
    await cache.getGroup(REF);
    expect(store.reads).toHaveLength(2);
  });
});
