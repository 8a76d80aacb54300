import type { EntryRecord } from '../domain/entry-record.ts';
import type { EntryColumn } from './api-types.ts';
import { type IndexedEntry, indexEntry, sortEntries } from './entry-rows.ts';

/**
 * The entries of each namespace a page looks at, read from the registry (one Query of the
 * namespace, paged) and kept here so that sorting, filtering and paging cost no read. The
 * registry has no change stream (as `registrar get -w`), so a namespace in view is read again;
 * never sooner than `refreshMs` after the last read, nor than DUTY times that read's own
 * duration: a 20,000-entry namespace that takes 0.6 s to read is read at most every 12 s, so
 * the dashboard spends at most 1/DUTY of its time, and of the table's reads, on one namespace.
 */
export const DUTY = 20;

export interface Snapshot {
  namespace: string;
  entries: readonly IndexedEntry[];
  readAt: number;
  /** Changes whenever what the namespace holds changes (the page reloads its view then). */
  version: string;
}

interface Slot {
  snapshot?: Snapshot;
  reading?: Promise<Snapshot>;
  /** How long the last read took. */
  lastReadMs: number;
  sorted: Map<string, IndexedEntry[]>;
}

export class NamespaceSnapshots {
  readonly #read: (namespace: string) => Promise<EntryRecord[]>;
  readonly #now: () => number;
  readonly #refreshMs: number;
  readonly #slots = new Map<string, Slot>();

  readonly #elapsed: () => number;

  /** `elapsed`: a monotonic clock in ms that times the reads (tests pass their own). */
  constructor(
    read: (namespace: string) => Promise<EntryRecord[]>,
    now: () => number,
    refreshMs: number,
    elapsed: () => number = () => performance.now(),
  ) {
    this.#read = read;
    this.#now = now;
    this.#refreshMs = refreshMs;
    this.#elapsed = elapsed;
  }

  /** Whether the namespace was read (a read under way does not count). */
  has(namespace: string): boolean {
    return this.#slots.get(namespace)?.snapshot !== undefined;
  }

  /** The namespace as last read; read now only when it never was. */
  async current(namespace: string): Promise<Snapshot> {
    const slot = this.#slot(namespace);
    return slot.snapshot ?? (await this.#load(namespace, slot));
  }

  /** Reads the namespace again if its last read is old enough (see DUTY); else the last read. */
  async refresh(namespace: string): Promise<Snapshot> {
    const slot = this.#slot(namespace);
    const { snapshot } = slot;
    if (snapshot && this.#now() - snapshot.readAt < this.minIntervalMs(namespace)) return snapshot;
    return await this.#load(namespace, slot);
  }

  /** How soon after its last read a namespace may be read again. */
  minIntervalMs(namespace: string): number {
    return Math.max(this.#refreshMs, DUTY * (this.#slots.get(namespace)?.lastReadMs ?? 0));
  }

  /** The entries sorted by a column, kept until the next read of the namespace. */
  sorted(snapshot: Snapshot, sort: EntryColumn, order: 'asc' | 'desc'): IndexedEntry[] {
    const slot = this.#slot(snapshot.namespace);
    const key = `${snapshot.version}|${sort}|${order}`;
    let sorted = slot.sorted.get(key);
    if (!sorted) {
      // Only the newest read's orders are kept: a few arrays of references per namespace.
      if (slot.snapshot?.version !== snapshot.version) {
        return sortEntries(snapshot.entries, sort, order);
      }
      sorted = sortEntries(snapshot.entries, sort, order);
      slot.sorted.set(key, sorted);
    }
    return sorted;
  }

  #slot(namespace: string): Slot {
    let slot = this.#slots.get(namespace);
    if (!slot) {
      slot = { lastReadMs: 0, sorted: new Map() };
      this.#slots.set(namespace, slot);
    }
    return slot;
  }

  /** One read at a time per namespace: every caller waiting for it gets the same result. */
  #load(namespace: string, slot: Slot): Promise<Snapshot> {
    slot.reading ??= (async () => {
      const started = this.#elapsed();
      try {
        const records = await this.#read(namespace);
        const readAt = this.#now();
        const version = fingerprint(records);
        const previous = slot.snapshot;
        // An unchanged namespace keeps its entries, and with them the sorted orders.
        const snapshot =
          previous && previous.version === version
            ? { ...previous, readAt }
            : {
                namespace,
                entries: records.map((record) => indexEntry(record, readAt)),
                readAt,
                version,
              };
        if (snapshot.version !== previous?.version) slot.sorted.clear();
        slot.snapshot = snapshot;
        return snapshot;
      } finally {
        slot.lastReadMs = this.#elapsed() - started;
        slot.reading = undefined;
      }
    })();
    return slot.reading;
  }
}

/**
 * Two reads of an unchanged namespace give the same value: every change of an entry's state
 * bumps its revision, so names and revisions say whether anything was added, changed or deleted.
 */
export function fingerprint(records: readonly EntryRecord[]): string {
  let hash = 0x811c9dc5;
  const names = records
    // A refused claim of an entry's address is noted without a revision bump.
    .map((r) => `${r.entry.metadata.name}@${r.revision}@${r.addressConflict?.at ?? ''}`)
    .sort();
  for (const part of names) {
    for (let i = 0; i < part.length; i++) {
      hash ^= part.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    hash ^= 0x2c;
  }
  return `${records.length}-${hash.toString(16)}`;
}
