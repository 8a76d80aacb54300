import { describe, expect, it } from 'vitest';
import type { EntryRecord } from '../../lib/domain/entry-record.ts';
import { ISTIO_API_VERSION, type WorkloadEntry } from '../../lib/domain/model.ts';
import {
  connectionKey,
  DRAINING_MESSAGE,
  decodeConnectionRecord,
  decodeEntry,
  decodeGroup,
  decodeToken,
  encodeConnectionRecord,
  encodeEntry,
  encodeGroup,
  encodeToken,
  entryKey,
  groupKey,
  sweepShard,
  tokenKey,
} from '../../lib/store/item-codec.ts';
import { SWEEP_SHARDS } from '../../lib/store/table-definition.ts';

const entry: WorkloadEntry = {
  apiVersion: ISTIO_API_VERSION,
  kind: 'WorkloadEntry',
  metadata: { name: 'web-10-0-0-1', namespace: 'shop', labels: { app: 'web' } },
  spec: { address: '10.0.0.1' },
};
const ref = { namespace: 'shop', name: 'web-10-0-0-1' };

describe('keys', () => {
  it('follows the table layout of the architecture', () => {
    expect(entryKey(ref)).toEqual({ pk: 'NS#shop', sk: 'WE#web-10-0-0-1' });
    expect(groupKey({ namespace: 'shop', name: 'web' })).toEqual({ pk: 'NS#shop', sk: 'WG#web' });
    expect(connectionKey('abc=')).toEqual({ pk: 'CONN#abc=', sk: 'CONN' });
    expect(tokenKey('t1')).toEqual({ pk: 'TOKEN', sk: 't1' });
  });

  it('puts an entry in the same shard every time, and uses every shard', () => {
    expect(sweepShard(ref)).toBe(sweepShard({ ...ref }));
    const shards = new Set(
      Array.from({ length: 200 }, (_, i) => sweepShard({ namespace: 'ns', name: `vm-${i}` })),
    );
    expect([...shards].sort()).toEqual(Array.from({ length: SWEEP_SHARDS }, (_, i) => i));
  });
});

describe('entries', () => {
  it('round-trips a connected auto-registered entry with epoch-ms times, its holders and their connect times', () => {
    const record: EntryRecord = {
      entry,
      autoRegistrationGroup: 'web',
      healthChecksEnabled: true,
      groupGeneration: 3,
      identity: { principal: 'token:t1', namespace: 'shop' },
      connection: {
        controller: 'workload-registrar',
        connectedAt: 1_000,
        connectionIds: ['a', 'b'],
        holderSince: { a: 500, b: 1_000 },
        newestConnectionId: 'b',
      },
      health: { status: 'False', message: 'down', lastProbeTime: 3_000, lastTransitionTime: 2_000 },
      revision: 4,
    };
    const item = encodeEntry(record);

    expect(item).toMatchObject({
      connectedAt: 1_000,
      conns: new Set(['a', 'b']),
      'held:a': 500,
      'held:b': 1_000,
      healthStatus: 'False',
      healthyFalseSince: 2_000,
      sweepState: `C#${sweepShard(ref)}`,
      sweepAt: 1_000,
    });
    expect(decodeEntry(item)).toEqual(record);
  });

  it('indexes a disconnected entry by its disconnect time and stores no empty set', () => {
    const item = encodeEntry({
      entry,
      autoRegistrationGroup: 'web',
      connection: { controller: 'c', disconnectedAt: 5_000, connectionIds: [] },
      revision: 2,
    });

    // In its namespace's own departures: `D#<namespace>#<shard>`.
    expect(item.sweepState).toBe(`D#${ref.namespace}#${sweepShard(ref)}`);
    expect(item.sweepAt).toBe(5_000);
    expect('conns' in item).toBe(false);
  });

  it('keeps a hand-made entry out of the sweep index', () => {
    const item = encodeEntry({ entry, revision: 1 });

    expect(item.sweepState).toBeUndefined();
    expect(decodeEntry(item)).toEqual({ entry, revision: 1 });
  });

  it('takes the transition time from the current status', () => {
    const decoded = decodeEntry({
      ...entryKey(ref),
      entry,
      revision: 1,
      healthStatus: 'True',
      lastProbeTime: 9,
      healthyTrueSince: 7,
    });

    expect(decoded.health).toEqual({ status: 'True', lastProbeTime: 9, lastTransitionTime: 7 });
  });

  // A planned restart (`systemctl restart`): the old process drains, the new one connects,
  // which cancels the drain (removes drainingSince) and leaves the drain's Healthy False.
  const drainedThenReconnected = {
    ...entryKey(ref),
    entry,
    revision: 3,
    autoRegistrationGroup: 'web',
    connectedAt: 20,
    healthStatus: 'False' as const,
    healthMessage: DRAINING_MESSAGE,
    lastProbeTime: 10,
    healthyFalseSince: 10,
  };

  it('reads no health for an entry without a probe once a new connect cancelled its drain', () => {
    // No probe means no report will ever replace the drain's False: the VM would stay out.
    expect(decodeEntry({ ...drainedThenReconnected, healthChecksEnabled: false }).health).toBe(
      undefined,
    );
    expect(decodeEntry(drainedThenReconnected).health).toBe(undefined);
  });

  it("keeps the drain's False for an entry with a probe until its agent reports, and while draining", () => {
    expect(
      decodeEntry({ ...drainedThenReconnected, healthChecksEnabled: true }).health,
    ).toMatchObject({ status: 'False', message: DRAINING_MESSAGE });
    expect(
      decodeEntry({ ...drainedThenReconnected, healthChecksEnabled: false, drainingSince: 10 })
        .health,
    ).toMatchObject({ status: 'False', reason: 'Draining' });
  });
});

describe('groups, connections and tokens', () => {
  it('round-trips a group with its generation in the metadata', () => {
    const group = {
      apiVersion: ISTIO_API_VERSION,
      kind: 'WorkloadGroup' as const,
      metadata: { name: 'web', namespace: 'shop', uid: 'u1' },
      spec: { template: { ports: { http: 8080 } } },
    };
    const item = encodeGroup({ group, generation: 2 }, 5);

    expect(item.revision).toBe(5);
    expect(decodeGroup(item)).toEqual({
      group: { ...group, metadata: { ...group.metadata, generation: 2 } },
      generation: 2,
    });
  });

  it('round-trips a connection record', () => {
    const record = { connectionId: 'abc=', entry: ref, connectedAt: 42 };

    expect(decodeConnectionRecord(encodeConnectionRecord(record))).toEqual(record);
  });

  it('round-trips a token without an id attribute', () => {
    const token = { id: 't1', secretHash: 'h', namespace: 'shop', createdAt: 1, expiresAt: 2 };
    const item = encodeToken(token);

    expect(item).toEqual({
      pk: 'TOKEN',
      sk: 't1',
      secretHash: 'h',
      namespace: 'shop',
      createdAt: 1,
      validUntil: 2,
    });
    expect(decodeToken(item)).toEqual(token);
  });

  it('reads a token written with its expiry in expiresAt (before validUntil)', () => {
    const legacy = {
      pk: 'TOKEN',
      sk: 't1',
      secretHash: 'h',
      namespace: 'shop',
      createdAt: 1,
      expiresAt: 2,
    };
    expect(decodeToken(legacy)).toEqual({
      id: 't1',
      secretHash: 'h',
      namespace: 'shop',
      createdAt: 1,
      expiresAt: 2,
    });
  });
});
