import type { DisruptionRecord, ZoneCount } from '../domain/disruption.ts';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { CatalogStore } from '../registration/catalog-store.ts';
import type { DisruptionStore } from '../registration/sweep-store.ts';
import type { SweepRun, SweepRunStore } from '../sweep/sweep-run-store.ts';
import type {
  EntriesResponse,
  EntryResponse,
  GroupResponse,
  OverviewResponse,
  RefusalReport,
  SweepRunView,
} from './api-types.ts';
import { entryDetail } from './entry-detail.ts';
import { type EntryQuery, entriesPage, indexEntry } from './entry-rows.ts';
import type { FirstEntriesReader } from './first-entries-reader.ts';
import { type GroupReads, readGroup } from './group-detail.ts';
import { NamespaceSnapshots, type Snapshot } from './namespace-snapshots.ts';
import { buildOverview } from './overview.ts';
import type { RefusalSource } from './refusals.ts';

/**
 * Everything the dashboard reads, and nothing it could write with: list and get, the sweeper's
 * counters, record and recent runs, and the refusal counts. No method here changes the
 * registry (the types say so: only reads are picked from the stores).
 */
export interface DashboardSources {
  catalog: Pick<CatalogStore, 'listNamespaces' | 'listEntries' | 'getEntry'>;
  disruption: Pick<DisruptionStore, 'zoneCounts' | 'disruptionRecord'>;
  sweepRuns: Pick<SweepRunStore, 'recent'>;
  refusals: RefusalSource;
  /** A group and its rollout (the group and rollout pages). Absent: those pages say so. */
  groups?: GroupReads;
  /**
   * The first entries of a namespace by name (one short Query): a namespace opened before it was
   * ever read shows them at once while the rest is read. Absent: the page waits for the read.
   */
  firstEntries?: FirstEntriesReader['firstEntries'];
  /** Which registry, for the page's header. */
  target: string;
  /**
   * Called when the sources start reading another registry (the local runtime restarted on a
   * new port): what was read from the old one is dropped, never shown as the new one's.
   */
  onTargetChange?: (listener: () => void) => void;
  now: () => number;
}

/** The sweeper's runs shown: the last hour. */
export const SWEEP_WINDOW_MS = 60 * 60_000;

/** Namespaces read at once when the overview reads the fleet. */
const READ_CONCURRENCY = 4;

interface FleetState {
  readAt: number;
  namespaces: string[];
  complete: boolean;
  zones: ZoneCount[];
  disruption: DisruptionRecord | undefined;
  runs: SweepRun[];
  refusals: RefusalReport;
}

export class DashboardData {
  readonly #sources: DashboardSources;
  readonly #refreshMs: number;
  snapshots: NamespaceSnapshots;
  #fleet: FleetState | undefined;
  #fleetReading: Promise<FleetState> | undefined;
  #refusalsReadAt = 0;
  /**
   * Why the last read of the registry failed, until one succeeds. While set, nothing read
   * before is served as current: a page loaded meanwhile reads again, and gets the error when
   * that fails too (it once showed old numbers, and a fail-static banner long over, as live).
   */
  #failure: unknown;
  /** Counts forget()s: a read started before one is not kept. */
  #generation = 0;

  constructor(sources: DashboardSources, refreshMs: number) {
    this.#sources = sources;
    this.#refreshMs = refreshMs;
    this.snapshots = this.#newSnapshots();
    sources.onTargetChange?.(() => this.forget());
  }

  /** Drops everything read so far: the next request reads the registry afresh. */
  forget(): void {
    this.#generation++;
    this.snapshots = this.#newSnapshots();
    this.#fleet = undefined;
    this.#fleetReading = undefined;
    this.#refusalsReadAt = 0;
  }

  #newSnapshots(): NamespaceSnapshots {
    const sources = this.#sources;
    return new NamespaceSnapshots(
      (namespace) => sources.catalog.listEntries(namespace),
      sources.now,
      this.#refreshMs,
    );
  }

  get target(): string {
    return this.#sources.target;
  }

  /**
   * The overview from what was last read; reads first when nothing was. `refresh` reads again
   * what is due (the live updates do; a page load need not wait for a read of the fleet).
   */
  async overview(refresh = false): Promise<OverviewResponse> {
    const fleet =
      refresh || !this.#fleet || this.#failure !== undefined
        ? await this.#readFleet(refresh)
        : this.#fleet;
    const snapshots = await this.#mapNamespaces(fleet.namespaces, (namespace) =>
      refresh ? this.snapshots.refresh(namespace) : this.snapshots.current(namespace),
    );
    const now = this.#sources.now();
    const core = buildOverview({
      namespaces: snapshots,
      zones: fleet.zones,
      disruption: fleet.disruption,
      now,
    });
    return {
      generatedAt: now,
      target: this.#sources.target,
      ...core,
      entriesReadAt:
        snapshots.length === 0 ? null : Math.min(...snapshots.map((snapshot) => snapshot.readAt)),
      namespacesComplete: fleet.complete,
      sweeps: { since: now - SWEEP_WINDOW_MS, runs: fleet.runs.map(runView) },
      refusals: fleet.refusals,
    };
  }

  /**
   * One page of a namespace's entries; the namespace is read only when it never was. Its first
   * page by name, unfiltered, does not wait for that read: the table's first entries come with
   * one short Query, marked `partial` (the live updates bring the rest when it is read).
   */
  async entries(namespace: string, query: EntryQuery): Promise<EntriesResponse> {
    // After a failed read, the registry is read again before anything is shown from it.
    if (this.#failure !== undefined) await this.#readFleet(true);
    const { firstEntries } = this.#sources;
    if (!this.snapshots.has(namespace) && firstEntries && isFirstPageByName(query)) {
      // The short Query first, then the whole read: a table that answers one request at a time
      // (dynalite) would otherwise make the short one wait behind the first large page.
      const first = await firstEntries(namespace, query.pageSize).catch(() => undefined);
      // The page's next request, or its live updates, report a failure of the whole read.
      this.snapshots.current(namespace).catch(() => undefined);
      if (first) return this.#partialPage(namespace, query, first);
    }
    const snapshot = await this.snapshots.current(namespace);
    const sorted = this.snapshots.sorted(snapshot, query.sort, query.order);
    return entriesPage(namespace, sorted, query, snapshot.readAt, this.#sources.now());
  }

  /** Reads the namespace again when due; its version says whether it changed. */
  async refreshEntries(namespace: string): Promise<Snapshot> {
    try {
      return await this.snapshots.refresh(namespace);
    } catch (error) {
      this.#failure = error;
      throw error;
    }
  }

  /** One entry, read now (one GetItem); undefined when it is not there. */
  async entry(namespace: string, name: string): Promise<EntryResponse | undefined> {
    const record = await this.#sources.catalog.getEntry({ namespace, name });
    return record && this.#detail(record);
  }

  /** One group and its rollout, read now; undefined when there is no such group. */
  async group(namespace: string, name: string): Promise<GroupResponse | undefined> {
    const { groups } = this.#sources;
    if (!groups) throw new Error('this dashboard reads no groups');
    return await readGroup(groups, { namespace, name }, this.#sources.now());
  }

  #partialPage(namespace: string, query: EntryQuery, records: EntryRecord[]): EntriesResponse {
    const now = this.#sources.now();
    const entries = records.map((record) => indexEntry(record, now));
    return { ...entriesPage(namespace, entries, query, now, now), partial: true };
  }

  #detail(record: EntryRecord): EntryResponse {
    const now = this.#sources.now();
    return entryDetail(record, now, now);
  }

  #readFleet(refresh: boolean): Promise<FleetState> {
    const due = !this.#fleet || this.#sources.now() - this.#fleet.readAt >= this.#refreshMs;
    if (this.#fleet && this.#failure === undefined && !(refresh && due)) {
      return Promise.resolve(this.#fleet);
    }
    if (this.#fleetReading) return this.#fleetReading;
    const generation = this.#generation;
    const reading: Promise<FleetState> = (async () => {
      try {
        const { catalog, disruption, sweepRuns, refusals, now } = this.#sources;
        const at = now();
        // A source that bills each read (CloudWatch) says how often it is worth reading.
        const last = this.#fleet?.refusals;
        const refusalsDue = !last || at - this.#refusalsReadAt >= (refusals.everyMs ?? 0);
        const [list, zones, record, runs, refused] = await Promise.all([
          catalog.listNamespaces(),
          disruption.zoneCounts(),
          disruption.disruptionRecord(),
          sweepRuns.recent(at - SWEEP_WINDOW_MS),
          refusalsDue ? refusals.read(at) : (last as RefusalReport),
        ]);
        const fleet: FleetState = {
          readAt: at,
          namespaces: [...list.namespaces].sort(),
          complete: list.complete,
          zones,
          disruption: record,
          runs,
          refusals: refused,
        };
        // What an old registry answered after forget() is nobody's to keep.
        if (generation !== this.#generation) return fleet;
        if (refusalsDue) this.#refusalsReadAt = at;
        this.#fleet = fleet;
        this.#failure = undefined;
        return fleet;
      } catch (error) {
        if (generation === this.#generation) this.#failure = error;
        throw error;
      }
    })();
    this.#fleetReading = reading;
    const done = () => {
      if (this.#fleetReading === reading) this.#fleetReading = undefined;
    };
    reading.then(done, done);
    return reading;
  }

  async #mapNamespaces(
    namespaces: readonly string[],
    read: (namespace: string) => Promise<Snapshot>,
  ): Promise<Snapshot[]> {
    const results: Snapshot[] = new Array(namespaces.length);
    let next = 0;
    const worker = async () => {
      while (next < namespaces.length) {
        const index = next++;
        results[index] = await read(namespaces[index] as string);
      }
    };
    await Promise.all(Array.from({ length: READ_CONCURRENCY }, worker));
    return results;
  }
}

/** The view a namespace opens on: page 1 by name, no filter (the table's own order). */
function isFirstPageByName(query: EntryQuery): boolean {
  return (
    query.sort === 'name' &&
    query.order === 'asc' &&
    query.page === 1 &&
    query.selector.length === 0 &&
    query.group === undefined &&
    query.health === undefined &&
    query.connection === undefined &&
    query.name === undefined
  );
}

function runView(run: SweepRun): SweepRunView {
  return {
    at: run.at,
    deleted: run.deleted,
    checked: run.candidatesRead + run.livenessChecked,
    candidatesRead: run.candidatesRead,
    livenessChecked: run.livenessChecked,
    held: run.held,
    slowed: run.slowed,
    failed: run.failed,
    conflicts: run.conflicts,
    stoppedEarly: run.stoppedEarly,
    mode: run.mode,
  };
}
