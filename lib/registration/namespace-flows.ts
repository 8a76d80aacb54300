import type { EntryRecord } from '../domain/entry-record.ts';
import { mergeOrdered } from '../domain/merge-ordered.ts';
import type { EpochMillis } from '../domain/model.ts';
import { type SweepPolicy, sweepDueAt } from '../domain/sweep-policy.ts';
import { isDeliberate } from './fail-static-guard.ts';
import type { DepartureStore } from './sweep-store.ts';

/**
 * Flows opened side by side: each reads the first page of its (up to 8) index shards at once,
 * so 6 flows keep ~48 queries in flight, under the SDK's 50 sockets per client.
 */
const OPEN_CONCURRENCY = 6;

export type FlowStore = Pick<DepartureStore, 'departuresOf'>;

/**
 * One namespace's due candidates, the unit the fair sweeper shares a run by (as Kubernetes' API
 * Priority and Fairness shares a server by flow). Two queues, each in due order: clean
 * departures, and abnormal ones with the namespace's stale entries. They take turns, so a
 * clean departure never waits behind its namespace's held or slowed backlog, and a crashed VM
 * never waits behind its namespace's clean backlog.
 */
export class NamespaceFlow {
  readonly namespace: string;
  readonly #queues: Lookahead<EntryRecord>[];
  readonly #dueAt: (record: EntryRecord) => EpochMillis;
  #turn = 0;

  constructor(
    namespace: string,
    queues: AsyncIterable<EntryRecord>[],
    dueAt: (record: EntryRecord) => EpochMillis,
  ) {
    this.namespace = namespace;
    this.#queues = queues.map((queue) => new Lookahead(queue));
    this.#dueAt = dueAt;
  }

  /** Reads the head of each queue (the first page of each shard). */
  async open(): Promise<void> {
    await Promise.all(this.#queues.map((queue) => queue.fill()));
  }

  /** When its oldest waiting candidate became due; undefined when it has none. */
  headDueAt(): EpochMillis | undefined {
    const heads = this.#queues.flatMap((queue) => (queue.head ? [this.#dueAt(queue.head)] : []));
    return heads.length > 0 ? Math.min(...heads) : undefined;
  }

  /** The next candidate, the queues taking turns; undefined once both are empty. */
  async take(): Promise<EntryRecord | undefined> {
    for (let tried = 0; tried < this.#queues.length; tried++) {
      const index = (this.#turn + tried) % this.#queues.length;
      const record = await this.#queues[index]?.shift();
      if (record) {
        this.#turn = index + 1;
        return record;
      }
    }
    return undefined;
  }

  /** Ends its index reads (a run that stops with candidates left). */
  async close(): Promise<void> {
    await Promise.all(this.#queues.map((queue) => queue.close()));
  }
}

export interface FlowInput {
  /** Every namespace that may hold departures. */
  namespaces: Iterable<string>;
  /** Candidates from the keys every namespace shares (0.1.0's departures, stale entries). */
  shared: readonly EntryRecord[];
  disconnectedAtOrBefore: EpochMillis;
  policy: SweepPolicy;
  /** False for a namespace whose abnormal departures are not read (held, or fail static blind). */
  readsAbnormal: (namespace: string) => boolean;
  onReadFailure: (error: unknown) => void;
}

/** One flow per namespace, each opened (its heads read), at most OPEN_CONCURRENCY at once. */
export async function openFlows(store: FlowStore, input: FlowInput): Promise<NamespaceFlow[]> {
  const dueAt = (record: EntryRecord) => sweepDueAt(record, input.policy);
  const shared = new Map<string, { clean: EntryRecord[]; abnormal: EntryRecord[] }>();
  for (const record of input.shared) {
    const namespace = record.entry.metadata.namespace;
    const lists = shared.get(namespace) ?? { clean: [], abnormal: [] };
    (isDeliberate(record) ? lists.clean : lists.abnormal).push(record);
    shared.set(namespace, lists);
  }
  const names = [...new Set([...input.namespaces, ...shared.keys()])].sort();
  const flows = names.map((namespace) => {
    const own = shared.get(namespace);
    const queue = (kind: 'L' | 'D', extra: EntryRecord[] = []) =>
      mergeOrdered(
        [
          store.departuresOf(namespace, kind, input.disconnectedAtOrBefore, input.onReadFailure),
          listed(extra.sort((a, b) => dueAt(a) - dueAt(b))),
        ],
        dueAt,
      );
    const queues = [queue('L', own?.clean)];
    if (input.readsAbnormal(namespace)) queues.push(queue('D', own?.abnormal));
    return new NamespaceFlow(namespace, queues, dueAt);
  });
  await inLanes(flows, OPEN_CONCURRENCY, (flow) => flow.open());
  return flows;
}

/** Runs `work` over `items`, `width` at a time (a small pool: one use, no dependency). */
async function inLanes<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}

async function* listed<T>(items: readonly T[]): AsyncIterable<T> {
  yield* items;
}

/** An async stream with its next item read ahead, so its head can be looked at. */
class Lookahead<T> {
  readonly #iterator: AsyncIterator<T>;
  #next: IteratorResult<T> | undefined;

  constructor(stream: AsyncIterable<T>) {
    this.#iterator = stream[Symbol.asyncIterator]();
  }

  async fill(): Promise<void> {
    this.#next ??= await this.#iterator.next();
  }

  get head(): T | undefined {
    return this.#next && !this.#next.done ? this.#next.value : undefined;
  }

  async shift(): Promise<T | undefined> {
    await this.fill();
    const value = this.head;
    if (value !== undefined) this.#next = undefined;
    return value;
  }

  async close(): Promise<void> {
    if (!this.#next?.done) await this.#iterator.return?.();
  }
}
