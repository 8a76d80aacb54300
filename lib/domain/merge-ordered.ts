/**
 * Merges streams that are each ordered by `key` into one ordered stream, reading each lazily:
 * one item ahead per stream (a DynamoDB query stream fetches its next page only when its
 * buffered page is used up). The first items of all streams are read side by side.
 */
export async function* mergeOrdered<T>(
  streams: readonly AsyncIterable<T>[],
  key: (item: T) => number,
): AsyncIterable<T> {
  const iterators = streams.map((stream) => stream[Symbol.asyncIterator]());
  const heads = await Promise.all(iterators.map((iterator) => iterator.next()));
  try {
    for (;;) {
      let best = -1;
      for (let i = 0; i < heads.length; i++) {
        const head = heads[i];
        if (!head || head.done) continue;
        const current = heads[best];
        if (best < 0 || (current && !current.done && key(head.value) < key(current.value))) {
          best = i;
        }
      }
      if (best < 0) return;
      const head = heads[best] as IteratorYieldResult<T>;
      yield head.value;
      heads[best] = await (iterators[best] as AsyncIterator<T>).next();
    }
  } finally {
    // A consumer that stops early (a run at its deadline) ends every stream it left open.
    await Promise.all(
      iterators.map((iterator, i) => (heads[i]?.done ? undefined : iterator.return?.())),
    );
  }
}
