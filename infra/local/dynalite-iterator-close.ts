import { createRequire } from 'node:module';

/**
 * dynalite 4 reads LevelDB through streams over abstract-level iterators (db/index.js:
 * `createKeyStream`, `createValueStream`) and, when a stream ends or is destroyed, closes its
 * iterator with `iterator.return()` if there is one. abstract-level 3's iterators have no
 * `return()`: they close with `close()`. So every Query, Scan and sweep of the local store left
 * its iterator open, held in the database's set of open resources with its native LevelDB
 * iterator and snapshot: an idle `npm start` with a 300 ms sweep grew ~0.8 MB a second, with
 * the default 1-minute sweep ~2 MB a minute (a heap snapshot of the store thread: thousands of
 * `Iterator`/`DefaultValueIterator` objects retained by `ClassicLevel#resources`).
 *
 * This gives abstract-level's iterators the `return()` dynalite looks for: it closes the
 * iterator and answers as an async iterator's `return()` does. Idempotent; an abstract-level
 * that already has one is left alone. Local runtime only: no deployed code reads LevelDB.
 */

interface IteratorPrototype {
  close(): Promise<void>;
  return?: () => Promise<IteratorReturnResult<undefined>>;
}

interface AbstractLevelModule {
  AbstractIterator: { prototype: object };
  AbstractKeyIterator: { prototype: object };
  AbstractValueIterator: { prototype: object };
}

const requireCjs = createRequire(import.meta.url);

/** Every copy of abstract-level that dynalite's stores load: its own, level's, the backends'. */
function abstractLevels(): AbstractLevelModule[] {
  const fromDynalite = createRequire(requireCjs.resolve('dynalite'));
  const fromLevel = createRequire(fromDynalite.resolve('level'));
  const places = [
    fromDynalite,
    fromLevel,
    createRequire(fromLevel.resolve('classic-level')),
    createRequire(fromDynalite.resolve('memory-level')),
  ];
  const modules = new Set<AbstractLevelModule>();
  for (const place of places) modules.add(place('abstract-level') as AbstractLevelModule);
  return [...modules];
}

/** Installs the `return()`; the number of iterator prototypes that got one (0 the second time). */
export function closeIteratorsOnReturn(): number {
  let installed = 0;
  for (const level of abstractLevels()) {
    // The three public iterator classes share one (unexported) base: give it to that base.
    const common = Object.getPrototypeOf(level.AbstractIterator.prototype) as IteratorPrototype;
    if (typeof common.return === 'function') continue;
    Object.defineProperty(common, 'return', {
      configurable: true,
      writable: true,
      async value(this: IteratorPrototype): Promise<IteratorReturnResult<undefined>> {
        await this.close();
        return { done: true, value: undefined };
      },
    });
    installed++;
  }
  return installed;
}
