import type { EntryRecord } from './entry-record.ts';
import { formatHeartbeat, type Heartbeat } from './heartbeat.ts';
import { type HolderBeat, sameHeartbeat } from './holder-heartbeat.ts';

/**
 * Which heartbeat each live VM of a group is held to, and why when it is not the group's
 * setting (issue 44: an operator sees when a changed heartbeat is in force, and which VMs keep
 * an older one). A VM is counted by its newest connection (a rotation's two holders are one
 * VM). Pure.
 */
export type CensusReason =
  /** Held to the group's setting now. */
  | 'on-setting'
  /** Told another setting and not yet acknowledged the change (the sweeper tells it again). */
  | 'not-acknowledged'
  /** An agent before 0.3: takes no notice; keeps what it was told until it reconnects. */
  | 'older-agent'
  /** An agent that follows no heartbeat (before 0.2, or naming no version): the default. */
  | 'no-heartbeat-agent'
  /** Let in by a registrar before 0.3, which recorded nothing: 0.2's rule until it reconnects. */
  | 'unrecorded';

export interface CensusLine {
  heartbeat?: Heartbeat;
  reason: CensusReason;
  vms: number;
}

export function censusOf(records: Iterable<EntryRecord>, setting: Heartbeat): CensusLine[] {
  const lines = new Map<string, CensusLine>();
  for (const record of records) {
    const connection = record.connection;
    const id = connection?.newestConnectionId ?? connection?.connectionIds[0];
    if (id === undefined) continue;
    const beat = connection?.holderBeats?.[id];
    const reason = reasonOf(beat, setting);
    const heartbeat = beat?.told;
    const key = `${reason} ${heartbeat ? formatHeartbeat(heartbeat) : ''}`;
    const line = lines.get(key) ?? { reason, vms: 0, ...(heartbeat ? { heartbeat } : {}) };
    line.vms += 1;
    lines.set(key, line);
  }
  return [...lines.values()].sort((a, b) => b.vms - a.vms);
}

function reasonOf(beat: HolderBeat | undefined, setting: Heartbeat): CensusReason {
  if (!beat) return 'unrecorded';
  if (sameHeartbeat(beat.told, setting)) return 'on-setting';
  if (!beat.follows) return 'no-heartbeat-agent';
  if (!beat.notices) return 'older-agent';
  return 'not-acknowledged';
}

const WHY: Record<CensusReason, string> = {
  'on-setting': '',
  'not-acknowledged': 'told the change, not acknowledged yet',
  'older-agent': 'agents before 0.3 keep what they were told until they reconnect',
  'no-heartbeat-agent': 'agents that follow no heartbeat (before 0.2, or no version)',
  unrecorded: 'let in by a registrar before 0.3: its rule until they reconnect',
};

/** `98 on 5s x 2; 2 on 10s x 3 (agents before 0.3 keep ...)`; `none` without live VMs. */
export function formatCensus(lines: readonly CensusLine[]): string {
  if (lines.length === 0) return 'no live VMs';
  return lines
    .map((line) => {
      const on = line.heartbeat ? `on ${formatHeartbeat(line.heartbeat)}` : 'on 0.2 rule';
      const why = WHY[line.reason];
      return `${line.vms} ${on}${why ? ` (${why})` : ''}`;
    })
    .join('; ');
}

/**
 * The heartbeat each live connection of an entry is held to, and why, for `describe we`:
 * `5s x 2 (told at connect)`, `10s x 3 (acknowledged 12s ago)`... One line per connection.
 */
export function heldLines(
  record: EntryRecord,
  setting: Heartbeat,
  age: (at: number) => string,
): string[] {
  const connection = record.connection;
  return (connection?.connectionIds ?? []).map((id) => {
    const beat = connection?.holderBeats?.[id];
    if (!beat) return `${id}: the rule of 0.2 (let in by a registrar before 0.3)`;
    const since = connection?.holderSince?.[id];
    const how = beat.at === since ? 'told at connect' : `acknowledged ${age(beat.at)} ago`;
    const reason = reasonOf(beat, setting);
    const why = reason === 'on-setting' ? '' : `; ${WHY[reason]}`;
    return `${id}: ${formatHeartbeat(beat.told)} (${how}${why})`;
  });
}
