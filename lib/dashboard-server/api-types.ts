/**
 * What the dashboard's server answers and its page reads: JSON over `GET /api/...`. Types
 * only, shared by the dashboard server (lib/dashboard-server/, Node) and dashboard/ui (the browser bundle).
 */

/** Entries by connection and health; health counts only entries in service (see overview.ts). */
export interface Tally {
  entries: number;
  connected: number;
  healthy: number;
  unhealthy: number;
  away: number;
  handMade: number;
}

/** A cell's fail-static word (lib/domain/cell-mode.ts: CellMode), the same everywhere. */
export type CellState = 'normal' | 'slowed' | 'held';

/** One namespace in one zone: what its entries say, and what the sweeper does there. */
export interface CellView extends Tally {
  namespace: string;
  zone: string;
  failStatic: {
    state: CellState;
    /** Why a disrupted cell is at the normal rate anyway (its slowdown's bound passed, ...). */
    note: string | null;
    /** RFC 3339: until when at the latest (the hold bound). */
    until: string | null;
    /** The cell's counters, as the sweeper judges it: connected, and away abnormally. */
    counted: { connected: number; away: number };
  };
}

export interface Banner {
  level: 'held' | 'slowed' | 'expired' | 'released';
  title: string;
  detail: string;
}

export interface SweepRunView {
  at: number;
  deleted: number;
  checked: number;
  candidatesRead: number;
  livenessChecked: number;
  held: number;
  slowed: number;
  failed: number;
  conflicts: number;
  stoppedEarly: boolean;
  mode: string;
}

export interface RefusalSeries {
  reason: string;
  total: number;
  /** [start of the period (ms), refusals in it]. */
  points: [number, number][];
}

export interface RefusalReport {
  /** Where the counts come from, said on the page. */
  source: string;
  /** Set when no counts can be had from this target, with why. */
  unavailable?: string;
  since: number;
  periodMs: number;
  series: RefusalSeries[];
}

export interface OverviewResponse {
  generatedAt: number;
  target: string;
  fleet: Tally;
  /** When the oldest namespace's entries were read (counts are as of then at the latest). */
  entriesReadAt: number | null;
  /** False on a table whose namespace index predates the registry's backfill. */
  namespacesComplete: boolean;
  cells: CellView[];
  failStatic: {
    /** The fleet's word: held, slowed, normal, hold-expired or released (lib/domain/cell-mode.ts). */
    mode: string;
    since: string | null;
    why: string | null;
    heldNamespaces: string[] | null;
    holdUntil: string | null;
    releasedAt: string | null;
    evaluatedAt: string | null;
  };
  banner: Banner | null;
  sweeps: { since: number; runs: SweepRunView[] };
  refusals: RefusalReport;
}

/** The columns of `registrar get we -o wide`, in its order. */
export const ENTRY_COLUMNS = [
  'name',
  'address',
  'connected',
  'healthy',
  'routable',
  'group',
  'age',
  'network',
  'locality',
  'identity',
  'agent',
] as const;
export type EntryColumn = (typeof ENTRY_COLUMNS)[number];

export const HEALTH_FILTERS = ['healthy', 'unhealthy', 'unknown'] as const;
export const CONNECTION_FILTERS = ['connected', 'disconnected', 'hand-made'] as const;

export interface EntryRow {
  name: string;
  cells: Record<EntryColumn, string>;
  labels: Record<string, string>;
}

export interface EntriesResponse {
  namespace: string;
  /** Entries in the namespace, and those the filters let through. */
  total: number;
  matched: number;
  page: number;
  pageSize: number;
  pages: number;
  sort: EntryColumn;
  order: 'asc' | 'desc';
  rows: EntryRow[];
  /** The namespace's groups, for the group filter. */
  groups: string[];
  readAt: number;
  /**
   * Only the namespace's first entries by name, shown while the whole namespace is read for the
   * first time: `total`, `matched` and `pages` count only them until then.
   */
  partial?: true;
}

export interface HolderView {
  connectionId: string;
  since: number | null;
  age: string;
  newest: boolean;
}

export interface EventView {
  type: 'Normal' | 'Warning';
  reason: string;
  at: number;
  age: string;
  message: string;
  /** The component that recorded it, as describe's From column. */
  from: string;
}

export interface EntryResponse {
  namespace: string;
  name: string;
  yaml: string;
  connected: string;
  group: string | null;
  identity: string | null;
  holders: HolderView[];
  healthy: {
    status: string;
    reason: string | null;
    message: string | null;
    lastProbeTime: string | null;
    lastTransitionTime: string | null;
  } | null;
  events: EventView[];
  readAt: number;
}

/** What `GET /api/...` answers for a request it refuses or cannot serve. */
export interface ErrorResponse {
  error: string;
}

/** A group's rollout, as `registrar rollout status wg/NAME -o json` prints it. */
export interface RolloutView {
  generation: number;
  pace: string;
  entries: number;
  updated: number;
  upToDate: number;
  pending: number;
  waiting: number;
  olderIdentity: number;
  paused: boolean;
  completedAt: string | null;
  startedAt: string | null;
  state: 'complete' | 'progressing' | 'paused';
}

/** One WorkloadGroup: its template as `get wg -o yaml` prints it, and its rollout. */
export interface GroupResponse {
  namespace: string;
  name: string;
  generation: number;
  serviceAccount: string;
  network: string;
  probe: string;
  yaml: string;
  rollout: RolloutView;
  readAt: number;
}
