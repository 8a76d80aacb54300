import { describe, expect, it } from 'vitest';
import { composeAdapters, without } from '../../lib/wiring/compose-adapters.ts';

/** Two adapters as lib/store writes them: classes whose calls use their own private state. */
class Counters {
  #count = 0;
  add(n: number): number {
    this.#count += n;
    return this.#count;
  }
}

class Groups {
  readonly #names = new Set<string>();
  put(name: string): void {
    this.#names.add(name);
  }
  has(name: string): boolean {
    return this.#names.has(name);
  }
}

class Catalog {
  has(name: string): boolean {
    return name === 'from-catalog';
  }
  list(): string[] {
    return ['from-catalog'];
  }
}

describe('composeAdapters', () => {
  it("serves each call from the adapter that defines it, with that adapter's own state", () => {
    const store = composeAdapters(new Counters(), new Groups());

    store.put('web');

    expect(store.add(2)).toBe(2);
    expect(store.add(3)).toBe(5);
    expect(store.has('web')).toBe(true);
    expect(store.has('db')).toBe(false);
  });

  it('serves a call detached from the composition (a caller may pass it on)', () => {
    const { add } = composeAdapters(new Counters());

    expect(add(1)).toBe(1);
  });

  it('refuses two adapters that define the same call, naming it', () => {
    expect(() => composeAdapters(new Groups(), new Catalog())).toThrow(
      "two adapters define 'has'; compose one of them without it (without(adapter, 'has'))",
    );
  });

  it('composes an adapter without the calls another one serves', () => {
    const store = composeAdapters(new Groups(), without(new Catalog(), 'has'));

    store.put('web');

    expect(store.has('web')).toBe(true);
    expect(store.has('from-catalog')).toBe(false);
    expect(store.list()).toEqual(['from-catalog']);
  });

  it("does not take a call for a duplicate because Object's prototype has its name", () => {
    class Printer {
      toString(): string {
        return 'printer';
      }
    }

    expect(composeAdapters(new Printer()).toString()).toBe('printer');
  });
});
