import { describe, expect, it } from 'vitest';
import type { EntryRecord } from '../../lib/domain/entry-record.ts';
import { censusOf, formatCensus, heldLines } from '../../lib/domain/heartbeat-census.ts';
import type { HolderBeat } from '../../lib/domain/holder-heartbeat.ts';

const T0 = Date.UTC(2026, 10, 28, 12);
const FIVE_BY_TWO = { intervalMs: 5_000, misses: 2 };
const TEN_BY_THREE = { intervalMs: 10_000, misses: 3 };

function vm(id: string, beat: HolderBeat | undefined): EntryRecord {
  return {
    entry: {
      apiVersion: 'v1',
      kind: 'WorkloadEntry',
      metadata: { name: id, namespace: 'shop' },
      spec: {},
    },
    revision: 1,
    connection: {
      controller: 'c',
      connectionIds: [id],
      newestConnectionId: id,
      holderSince: { [id]: T0 },
      ...(beat ? { holderBeats: { [id]: beat } } : {}),
    },
  } as EntryRecord;
}

const beat = (told: typeof FIVE_BY_TWO, more: Partial<HolderBeat> = {}): HolderBeat => ({
  told,
  follows: true,
  notices: true,
  at: T0,
  ...more,
});

describe("the heartbeats of a group's live VMs", () => {
  it("counts each setting and names why a VM is not on the group's", () => {
    const records = [
      vm('a', beat(FIVE_BY_TWO)),
      vm('b', beat(FIVE_BY_TWO)),
      vm('c', beat(TEN_BY_THREE, { notices: false })),
      vm('d', beat(TEN_BY_THREE)),
      vm('e', undefined),
    ];
    expect(formatCensus(censusOf(records, FIVE_BY_TWO))).toBe(
      '2 on 5s x 2; 1 on 10s x 3 (agents before 0.3 keep what they were told until they reconnect); 1 on 10s x 3 (told the change, not acknowledged yet); 1 on 0.2 rule (let in by a registrar before 0.3: its rule until they reconnect)',
    );
  });

  it("shows each connection's bound and how it came to it", () => {
    const told = vm('a', beat(FIVE_BY_TWO));
    const acked = vm('b', beat(FIVE_BY_TWO, { at: T0 + 30_000 }));
    expect(heldLines(told, FIVE_BY_TWO, () => '1m')).toEqual(['a: 5s x 2 (told at connect)']);
    expect(heldLines(acked, TEN_BY_THREE, () => '1m')).toEqual([
      'b: 5s x 2 (acknowledged 1m ago; told the change, not acknowledged yet)',
    ]);
  });
});
