import { cellKey, type DisruptionRecord, type ZoneCount, zoneOf } from '../domain/disruption.ts';
import { type FailStaticStatus, failStaticStatus } from '../domain/fail-static-status.ts';
import type { Banner, CellView, OverviewResponse, Tally } from './api-types.ts';
import type { IndexedEntry } from './entry-rows.ts';

/**
 * The overview's numbers, from what the registry holds: each namespace's entries (read by the
 * dashboard) counted per zone, and the sweeper's own view of each cell (its counters and its
 * fail-static record, in the words `registrar sweep status` uses: lib/domain/fail-static-status.ts).
 *
 * Counting: an auto-registered entry is connected while a connection holds it, and away once
 * the last one went (until the sweeper deletes it). Healthy and unhealthy count the entries in
 * service, connected ones and hand-made ones, by their Healthy condition; an entry without a
 * verdict yet counts in neither, and an away entry's last verdict is not counted (its VM is
 * gone, whatever its probe said last).
 */

export function emptyTally(): Tally {
  return { entries: 0, connected: 0, healthy: 0, unhealthy: 0, away: 0, handMade: 0 };
}

export function countEntry(tally: Tally, entry: IndexedEntry): void {
  tally.entries++;
  if (entry.connection === 'disconnected') {
    tally.away++;
    return;
  }
  if (entry.connection === 'hand-made') tally.handMade++;
  else tally.connected++;
  if (entry.health === 'healthy') tally.healthy++;
  else if (entry.health === 'unhealthy') tally.unhealthy++;
}

export interface OverviewInput {
  namespaces: readonly { namespace: string; entries: readonly IndexedEntry[] }[];
  zones: ZoneCount[];
  disruption: DisruptionRecord | undefined;
  now: number;
}

export type OverviewCore = Pick<OverviewResponse, 'fleet' | 'cells' | 'failStatic' | 'banner'>;

export function buildOverview({ namespaces, zones, disruption, now }: OverviewInput): OverviewCore {
  const status = failStaticStatus(disruption, zones, now);
  const cells = new Map<string, CellView>();
  const cell = (namespace: string, zone: string): CellView => {
    const key = cellKey(namespace, zone);
    let found = cells.get(key);
    if (!found) {
      found = {
        namespace,
        zone,
        ...emptyTally(),
        failStatic: {
          state: 'normal',
          note: null,
          until: null,
          counted: { connected: 0, away: 0 },
        },
      };
      cells.set(key, found);
    }
    return found;
  };
  const fleet = emptyTally();
  for (const { namespace, entries } of namespaces) {
    for (const entry of entries) {
      countEntry(cell(namespace, zoneOf(entry.record.entry.spec.locality)), entry);
      countEntry(fleet, entry);
    }
  }
  for (const counted of status.cells) {
    const view = cell(counted.namespace, counted.zone);
    view.failStatic = {
      state: counted.state,
      note: counted.note,
      until: counted.until,
      counted: { connected: counted.connected, away: counted.away },
    };
  }
  const sorted = [...cells.values()].sort(
    (a, b) => a.namespace.localeCompare(b.namespace) || a.zone.localeCompare(b.zone),
  );
  return {
    fleet,
    cells: sorted,
    failStatic: {
      mode: status.mode,
      since: status.since,
      why: status.why,
      heldNamespaces: status.heldNamespaces,
      holdUntil: status.holdUntil,
      releasedAt: status.releasedAt,
      evaluatedAt: status.evaluatedAt,
    },
    banner: bannerOf(status, sorted),
  };
}

type Status = FailStaticStatus;

/**
 * Eureka's self-preservation banner, for fail static: shown whenever the sweeper holds or slows
 * deletions anywhere, saying where, why and until when.
 */
function bannerOf(status: Status, cells: readonly CellView[]): Banner | null {
  const where = status.heldNamespaces
    ? `namespace${status.heldNamespaces.length === 1 ? '' : 's'} ${status.heldNamespaces.join(', ')}`
    : 'every namespace';
  const until = status.holdUntil ? ` until ${toSecond(status.holdUntil)} at the latest` : '';
  if (status.mode === 'held') {
    return {
      level: 'held',
      title: `Deletions held in ${where}${until}`,
      detail: `${status.why ?? 'the sweeper judged a fault of the control plane'}. Entries that went away abnormally stay registered (and in the mesh); clean departures and terminated instances are still deleted. If the VMs are really gone: registrar sweep --force.`,
    };
  }
  if (status.mode === 'hold-expired') {
    return {
      level: 'expired',
      title: 'A hold outlived its bound',
      detail:
        'Deletions resumed at the normal rate; the alarm stays raised until the disruption ends. Find out why the VMs went away (docs/operations.md).',
    };
  }
  if (status.mode === 'released') {
    return {
      level: 'released',
      title: `A hold was released by an operator${status.releasedAt ? ` at ${toSecond(status.releasedAt)}` : ''}`,
      detail: 'Deletions run at the normal rate until the disruption ends.',
    };
  }
  const slowed = cells.filter((cell) => cell.failStatic.state === 'slowed');
  if (slowed.length === 0) return null;
  const named = slowed
    .slice(0, 5)
    .map(
      (cell) =>
        `${cell.namespace} in ${cell.zone}${cell.failStatic.until ? ` until ${toSecond(cell.failStatic.until)}` : ''}`,
    );
  const more = slowed.length > named.length ? ` and ${slowed.length - named.length} more` : '';
  return {
    level: 'slowed',
    title: `Deletions slowed in ${slowed.length} ${slowed.length === 1 ? 'cell' : 'cells'}`,
    detail: `Most of these cells' entries went away abnormally at once, so their departed entries are deleted slowly: ${named.join('; ')}${more}. Other cells are swept at the normal rate.`,
  };
}

/** The page shows every time in RFC 3339 UTC to the second (dashboard/ui/format.ts): so does the banner. */
function toSecond(iso: string): string {
  return iso.replace(/\.\d+Z$/, 'Z');
}
