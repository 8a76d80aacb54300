import type { ResourceItem } from './commands/resources.ts';

/**
 * `get --watch` over a registry that has no watch API: DynamoDB is read again every interval
 * and each read is compared with the previous one, giving the events kubectl's watch prints.
 * A change that is undone between two reads is not seen; nothing else is lost, since every
 * read is the whole current state.
 */

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface WatchEvent {
  type: WatchEventType;
  item: ResourceItem;
}

export interface WatchOptions {
  /** The current objects (one read of the registry). */
  list(): Promise<ResourceItem[]>;
  intervalMs: number;
  signal: AbortSignal;
  /** The first read's objects as ADDED (`initial`), then each later read's changes. */
  onEvents(events: WatchEvent[], initial: boolean): void;
}

/** Runs until the signal aborts; a failed read ends it with that error. */
export async function watchChanges(options: WatchOptions): Promise<void> {
  let known = new Map<string, ResourceItem>();
  let initial = true;
  while (!options.signal.aborted) {
    const items = await untilAborted(options.list(), options.signal);
    if (items === undefined) return;
    const current = new Map(items.map((item) => [keyOf(item), item]));
    const events: WatchEvent[] = [];
    for (const [key, item] of current) {
      const before = known.get(key);
      if (!before) events.push({ type: 'ADDED', item });
      else if (before.fingerprint !== item.fingerprint) events.push({ type: 'MODIFIED', item });
    }
    for (const [key, item] of known) {
      if (!current.has(key)) events.push({ type: 'DELETED', item });
    }
    known = current;
    if (events.length > 0 || initial) options.onEvents(events, initial);
    initial = false;
    await sleep(options.intervalMs, options.signal);
  }
}

function keyOf(item: ResourceItem): string {
  return `${item.kind}/${item.namespace}/${item.name}`;
}

/** The read's result, or undefined when interrupted first (a late failure is then ignored). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => undefined);
      resolve(undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Waits `ms`, or less when the signal aborts first (`get events -w` waits so too). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
