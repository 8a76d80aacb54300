/**
 * The one word for what fail static does in a cell (one namespace in one zone), and for the
 * fleet: the sweeper paces its deletions by it, and the console's `sweep ...` line,
 * `registrar sweep status`, the dashboard and the metrics all show it, so they cannot
 * disagree. Before, each derived its own: the console printed the run's mode (`sweep normal
 * ... slowed=0`: no deletion had been deferred yet) while `sweep status` said the cell was
 * slowed, and the dashboard showed "Mode normal" under a "slowed" banner.
 *
 * Pure, and free of the rest of fail static (lib/domain/disruption.ts builds the facts from a
 * run's state, lib/domain/fail-static-status.ts from the record a run left), so both import it.
 */
import type { EpochMillis } from './model.ts';

/**
 * What the sweeper does with a cell's abnormally departed entries:
 * - normal: deletes each once due, at the normal rate;
 * - slowed: deletes them at the secondary rate, a few per run at most (a disrupted cell);
 * - held: deletes none of them (a hold of the cell's namespace).
 * Clean departures and terminated instances are deleted at the normal rate in every mode.
 */
export type CellMode = 'normal' | 'slowed' | 'held';

/**
 * The fleet's word: held while a hold is on, else slowed while any cell is, else normal; or,
 * after a hold, hold-expired (it outlived its bound) and released (`registrar sweep --force`):
 * both delete at the normal rate everywhere until the disruption ends, and are named so that
 * an operator sees the episode is not over.
 */
export type FleetMode = CellMode | 'hold-expired' | 'released';

/** Why a cell that looks disrupted is at the normal rate anyway. */
export type ModeNote = 'slowdown bound passed' | 'hold expired' | 'hold released';

/** What a run decided, in the shape both the run's state and its saved record give. */
export interface ModeFacts {
  mode: 'normal' | 'held' | 'hold-expired' | 'released';
  /** The namespaces a hold applies to; undefined: every namespace. */
  heldNamespaces?: readonly string[] | undefined;
  holdUntil?: EpochMillis | undefined;
  /** The disrupted cells (by cell key), each with the end of its slowdown when known. */
  disrupted: ReadonlyMap<string, EpochMillis | undefined>;
}

export interface CellModeOf {
  mode: CellMode;
  /** Until when at the latest (the hold's or the slowdown's bound), when known. */
  until?: EpochMillis;
  note?: ModeNote;
}

/** The mode of one cell (`cell` is its key, `<namespace>#<zone>`). */
export function cellMode(
  facts: ModeFacts,
  namespace: string,
  cell: string,
  now: EpochMillis,
): CellModeOf {
  const held = facts.heldNamespaces === undefined || facts.heldNamespaces.includes(namespace);
  if (facts.mode === 'held' && held) {
    return facts.holdUntil === undefined
      ? { mode: 'held' }
      : { mode: 'held', until: facts.holdUntil };
  }
  if (!facts.disrupted.has(cell)) return { mode: 'normal' };
  if (facts.mode === 'hold-expired') return { mode: 'normal', note: 'hold expired' };
  if (facts.mode === 'released') return { mode: 'normal', note: 'hold released' };
  const until = facts.disrupted.get(cell);
  if (until === undefined) return { mode: 'slowed' };
  // Every slowdown is bounded: a tenant that keeps its own cell disrupted (dripping in new
  // fakes) keeps it slowed at most the bound, and only its own.
  return now >= until
    ? { mode: 'normal', until, note: 'slowdown bound passed' }
    : { mode: 'slowed', until };
}

/** The fleet's word, from the run's mode and its cells' modes. */
export function fleetMode(facts: Pick<ModeFacts, 'mode'>, cells: Iterable<CellMode>): FleetMode {
  if (facts.mode === 'held') return 'held';
  for (const mode of cells) if (mode === 'slowed') return 'slowed';
  return facts.mode === 'normal' ? 'normal' : facts.mode;
}
