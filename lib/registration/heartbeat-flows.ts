import type { EntryRecord } from '../domain/entry-record.ts';
import type { ObjectRef } from '../domain/model.ts';
import type { HeartbeatStore } from '../store/registry-store.ts';

/**
 * One namespace's share of a heartbeat pass (sweep-heartbeat.ts): the held entries of its
 * groups that set a heartbeat, one group after another. The pass serves the namespaces'
 * flows in turn, one check each, as the deletion lane serves its namespace flows
 * (namespace-flows.ts): so a namespace's volume, however made (a group of 10,000 VMs, or a
 * thousand groups of ten), costs another namespace one check per round, never a pass.
 *
 * The next record is always asked for ahead (`pending`): every flow reads its first page as
 * the pass opens, side by side, and a flow's next page is on its way while the others take
 * their turns. A flow still reading a page is not waited for (`ready`): the pass serves the
 * others meanwhile, so one namespace's reads (its large pages, a slow store) never stand in
 * the way of another's turn.
 */
export class HeartbeatFlow {
  readonly namespace: string;
  readonly #records: AsyncIterator<EntryRecord>;
  #pending: Promise<IteratorResult<EntryRecord>>;
  #ready = false;

  constructor(namespace: string, records: AsyncIterable<EntryRecord>) {
    this.namespace = namespace;
    this.#records = records[Symbol.asyncIterator]();
    this.#pending = this.#readAhead();
  }

  /** Its next entry (or its end) is read: a turn given to it now does not wait. */
  get ready(): boolean {
    return this.#ready;
  }

  /** Settles once `ready`. */
  async whenReady(): Promise<void> {
    await this.#pending;
  }

  /** The next held entry of the namespace's heartbeat groups; undefined once there is none. */
  async take(): Promise<EntryRecord | undefined> {
    const next = await this.#pending;
    if (next.done) return undefined;
    this.#pending = this.#readAhead();
    return next.value;
  }

  #readAhead(): Promise<IteratorResult<EntryRecord>> {
    this.#ready = false;
    return this.#records.next().then((next) => {
      this.#ready = true;
      return next;
    });
  }

  /** Ends its reads (a pass that stops at the end of its run's interval, or its deadline). */
  async close(): Promise<void> {
    await this.#records.return?.();
  }
}

/**
 * A flow per namespace, in turn order: namespaces and each namespace's groups rotated by
 * `slot` (the pass's time in MIN_PASS_MS), so a pass that stops early does not leave the same
 * namespaces, or the same groups of one, for last pass after pass. Stateless: no cursor to lose.
 * A group whose read fails is reported and skipped; its namespace's other groups still come.
 */
export function heartbeatFlows(
  store: Pick<HeartbeatStore, 'heldEntriesOf'>,
  groups: Iterable<ObjectRef>,
  slot: number,
  onReadFailure: (error: unknown) => void,
): HeartbeatFlow[] {
  const byNamespace = new Map<string, ObjectRef[]>();
  for (const group of groups) {
    const list = byNamespace.get(group.namespace) ?? [];
    list.push(group);
    byNamespace.set(group.namespace, list);
  }
  const namespaces = rotated([...byNamespace.keys()].sort(), slot);
  return namespaces.map(
    (namespace) =>
      new HeartbeatFlow(
        namespace,
        heldEntriesOfAll(
          store,
          rotated(
            (byNamespace.get(namespace) ?? []).sort((a, b) => (a.name < b.name ? -1 : 1)),
            slot,
          ),
          onReadFailure,
        ),
      ),
  );
}

async function* heldEntriesOfAll(
  store: Pick<HeartbeatStore, 'heldEntriesOf'>,
  groups: readonly ObjectRef[],
  onReadFailure: (error: unknown) => void,
): AsyncGenerator<EntryRecord> {
  for (const group of groups) {
    try {
      for await (const record of store.heldEntriesOf(group)) yield record;
    } catch (error) {
      // One group's read failed: the namespace's other groups are still checked, and the
      // next pass reads this one again.
      onReadFailure(error);
    }
  }
}

function rotated<T>(items: readonly T[], slot: number): T[] {
  if (items.length === 0) return [];
  const first = ((slot % items.length) + items.length) % items.length;
  return [...items.slice(first), ...items.slice(0, first)];
}
