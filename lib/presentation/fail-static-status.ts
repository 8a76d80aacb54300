import {
  cellKey,
  type DisruptionRecord,
  describeHoldReason,
  type ZoneCount,
} from '../domain/disruption.ts';

/**
 * Fail static's state as `registrar sweep status -o json` prints it and the dashboard's banner
 * and cells read it: the mode, why, until when, and each cell's state.
 */
export function statusJson(record: DisruptionRecord | undefined, zones: ZoneCount[], now: number) {
  const holdUntil =
    record?.holdSince !== undefined && record.policy
      ? record.holdSince + record.policy.holdBoundMs
      : undefined;
  const iso = (at: number | undefined) => (at === undefined ? null : new Date(at).toISOString());
  return {
    mode: record?.mode ?? 'normal',
    since: iso(record?.since),
    reason: record?.reason ?? null,
    why: record?.reason && record.policy ? describeHoldReason(record.reason, record.policy) : null,
    // null: every namespace (a hold judged a fault of the control plane).
    heldNamespaces: record?.heldNamespaces ?? null,
    holdUntil: iso(holdUntil),
    releasedAt: iso(record?.releasedAt),
    evaluatedAt: iso(record?.evaluatedAt),
    away: zones.reduce((sum, zone) => sum + Math.max(0, zone.away), 0),
    cells: zones.map((zone) => {
      const state = cellState(record, zone, now);
      return { ...zone, state: state.state, until: iso(state.until) };
    }),
  };
}

/**
 * What the sweeper does with a cell's abnormally departed entries, and until when at the
 * latest, as the last run decided (lib/domain/disruption.ts: pacingOf).
 */
function cellState(
  record: DisruptionRecord | undefined,
  zone: ZoneCount,
  now: number,
): { state: 'held' | 'slowed' | 'bound passed' | 'normal'; until?: number } {
  if (!record) return { state: 'normal' };
  const cell = cellKey(zone.namespace, zone.zone);
  const bound = record.policy?.holdBoundMs;
  const held =
    record.mode === 'held' &&
    zone.away > 0 &&
    (record.heldNamespaces === undefined || record.heldNamespaces.includes(zone.namespace));
  if (held) {
    return record.holdSince !== undefined && bound !== undefined
      ? { state: 'held', until: record.holdSince + bound }
      : { state: 'held' };
  }
  if (record.mode !== 'normal' || !record.disruptedZones.includes(cell)) return { state: 'normal' };
  const since = record.slowedSince?.[cell];
  if (since === undefined || bound === undefined) return { state: 'slowed' };
  return since + bound <= now
    ? { state: 'bound passed', until: since + bound }
    : { state: 'slowed', until: since + bound };
}
