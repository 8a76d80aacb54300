import type { EntryRecord } from '../domain/entry-record.ts';
import { inRange, SAMPLE_EVERY } from '../domain/heartbeat-lanes.ts';
import type { ObjectRef } from '../domain/model.ts';
import type { HeartbeatCursors, HeartbeatStore, NameRange } from './heartbeat-store.ts';

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
 * the way of another's turn. The one exception is a flow's first page (`opened`): all of them
 * are asked for at once as the pass opens, and the first round waits for each in turn (up to
 * FIRST_PAGE_WAIT_MS), so a namespace whose first answer came a few milliseconds after
 * another's is not served after a page of the other's.
 */
export class HeartbeatFlow {
  readonly namespace: string;
  readonly #records: AsyncIterator<EntryRecord>;
  #pending: Promise<IteratorResult<EntryRecord>>;
  #ready = false;
  #opened = false;
  #done = false;
  #last: { group: string; after: string } | undefined;

  constructor(namespace: string, records: AsyncIterable<EntryRecord>) {
    this.namespace = namespace;
    this.#records = records[Symbol.asyncIterator]();
    this.#pending = this.#readAhead();
  }

  /** Its next entry (or its end) is read: a turn given to it now does not wait. */
  get ready(): boolean {
    return this.#ready;
  }

  /** Its first page is in (or its share turned out empty): it has been ready once. */
  get opened(): boolean {
    return this.#opened;
  }

  /** Settles once `ready`. */
  async whenReady(): Promise<void> {
    await this.#pending;
  }

  /** The next held entry of the namespace's heartbeat groups; undefined once there is none. */
  async take(): Promise<EntryRecord | undefined> {
    const next = await this.#pending;
    if (next.done) {
      this.#done = true;
      return undefined;
    }
    this.#pending = this.#readAhead();
    const group = next.value.autoRegistrationGroup;
    if (group !== undefined) this.#last = { group, after: next.value.entry.metadata.name };
    return next.value;
  }

  /** Every entry of its share was taken. */
  get done(): boolean {
    return this.#done;
  }

  /** The last entry taken (its group's name and its own), where a cut pass resumes. */
  get position(): { group: string; after: string } | undefined {
    return this.#last;
  }

  #readAhead(): Promise<IteratorResult<EntryRecord>> {
    this.#ready = false;
    return this.#records.next().then((next) => {
      this.#ready = true;
      this.#opened = true;
      return next;
    });
  }

  /** Ends its reads (a pass that stops at the end of its run's interval, or its deadline). */
  async close(): Promise<void> {
    await this.#records.return?.();
  }
}

/** A group of a lane's share and its range of entry names ({} for the whole group). */
export interface ShareGroup {
  ref: ObjectRef;
  range: NameRange;
}

/**
 * What a pass read of one stretch: the group, the names it covered (`range`: to the stretch's
 * end, or to the last name read when the pass was cut), and every SAMPLE_EVERY-th name read.
 */
export interface StretchRead {
  group: ObjectRef;
  range: NameRange;
  samples: string[];
}

/**
 * A flow per namespace, in turn order: namespaces and each namespace's groups rotated by
 * `slot` (the pass's time in MIN_PASS_MS), so a pass that stops early does not leave the same
 * namespaces for last pass after pass. A namespace with a cursor (its share of the last pass
 * was cut: the run's interval or deadline came first) starts in the cursor's group after the
 * entry it names, goes through its other groups, and ends with that group's entries up to
 * it: every held entry once, however many runs the namespace's share takes (one group of
 * 100,000 VMs is more than a run checks). A group whose read fails is reported and skipped;
 * its namespace's other groups still come. A group may be given with a range (a heartbeat
 * lane's cut of a large group): only that range is read, resumed within it.
 */
export function heartbeatFlows(
  store: Pick<HeartbeatStore, 'heldEntriesOf'>,
  groups: Iterable<ShareGroup>,
  slot: number,
  onReadFailure: (error: unknown) => void,
  cursors: HeartbeatCursors = {},
  onStretchRead?: (read: StretchRead) => void,
): HeartbeatFlow[] {
  const byNamespace = new Map<string, ShareGroup[]>();
  for (const group of groups) {
    const list = byNamespace.get(group.ref.namespace) ?? [];
    list.push(group);
    byNamespace.set(group.ref.namespace, list);
  }
  const namespaces = rotated([...byNamespace.keys()].sort(), slot);
  return namespaces.map((namespace) => {
    const own = (byNamespace.get(namespace) ?? []).sort((a, b) =>
      a.ref.name < b.ref.name ? -1 : 1,
    );
    return new HeartbeatFlow(
      namespace,
      heldEntriesOfAll(
        store,
        stretchesOf(own, slot, cursors[namespace]),
        onReadFailure,
        onStretchRead,
      ),
    );
  });
}

/** One stretch of a namespace's share: a group's held entries, or those in a name range. */
interface Stretch {
  group: ObjectRef;
  range: NameRange;
}

function stretchesOf(
  groups: readonly ShareGroup[],
  slot: number,
  cursor: { group: string; after: string } | undefined,
): Stretch[] {
  const whole = (share: ShareGroup) => ({ group: share.ref, range: share.range });
  const at = cursor ? groups.findIndex((share) => share.ref.name === cursor.group) : -1;
  const resumed = at >= 0 ? groups[at] : undefined;
  // A cursor outside the group's range (the lane's share changed with a new plan) is no
  // resume point: the pass starts over.
  if (!cursor || !resumed || !inRange(cursor.after, resumed.range)) {
    return rotated(groups, slot).map(whole);
  }
  const others = [...groups.slice(at + 1), ...groups.slice(0, at)];
  const { after, upTo } = resumed.range;
  return [
    { group: resumed.ref, range: { after: cursor.after, ...(upTo === undefined ? {} : { upTo }) } },
    ...others.map(whole),
    {
      group: resumed.ref,
      range: { ...(after === undefined ? {} : { after }), upTo: cursor.after },
    },
  ];
}

async function* heldEntriesOfAll(
  store: Pick<HeartbeatStore, 'heldEntriesOf'>,
  stretches: readonly Stretch[],
  onReadFailure: (error: unknown) => void,
  onStretchRead: ((read: StretchRead) => void) | undefined,
): AsyncGenerator<EntryRecord> {
  for (const { group, range } of stretches) {
    const samples: string[] = [];
    let read = 0;
    let last: string | undefined;
    let finished = false;
    try {
      for await (const record of store.heldEntriesOf(group, range)) {
        last = record.entry.metadata.name;
        if (read % SAMPLE_EVERY === 0) samples.push(last);
        read += 1;
        yield record;
      }
      finished = true;
    } catch (error) {
      // One group's read failed: the namespace's other groups are still checked, and the
      // next pass reads this one again.
      onReadFailure(error);
    } finally {
      // Cut (the pass ended mid-stretch) or failed: what was read up to `last` is still a
      // fresh reading of that part of the range.
      if (onStretchRead && (finished || last !== undefined)) {
        const covered = finished ? range : { ...range, upTo: last as string };
        onStretchRead({ group, range: covered, samples });
      }
    }
  }
}

function rotated<T>(items: readonly T[], slot: number): T[] {
  if (items.length === 0) return [];
  const first = ((slot % items.length) + items.length) % items.length;
  return [...items.slice(first), ...items.slice(0, first)];
}
