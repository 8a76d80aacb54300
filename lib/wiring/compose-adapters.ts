/**
 * One object over several adapters, each serving the calls it defines: what a caller that
 * takes several ports at once (a function's store, the local runtime's) is given, without a
 * class that forwards each call by hand (a new store call touches one port and one adapter).
 *
 * Two adapters that define the same call make the composition fail when it is built: which
 * one serves it must never depend on the order they are named in (use `without` to say it).
 */
export function composeAdapters<const P extends readonly object[]>(
  ...adapters: P
): Intersection<P[number]> {
  const composed: Record<string, unknown> = {};
  for (const adapter of adapters) {
    for (const [name, call] of callsOf(adapter)) {
      if (Object.hasOwn(composed, name)) {
        throw new Error(
          `two adapters define '${name}'; compose one of them without it (without(adapter, '${name}'))`,
        );
      }
      composed[name] = call.bind(adapter);
    }
  }
  return composed as Intersection<P[number]>;
}

/** The adapter without the named calls, where another adapter of the composition serves them. */
export function without<T extends object, K extends keyof T & string>(
  adapter: T,
  ...names: readonly K[]
): Omit<T, K> {
  const view: Record<string, unknown> = {};
  for (const [name, call] of callsOf(adapter)) {
    if (!(names as readonly string[]).includes(name)) view[name] = call.bind(adapter);
  }
  return view as Omit<T, K>;
}

type Call = (...args: unknown[]) => unknown;

/** The methods of an adapter (its class's and their parents'), or of a plain object's own. */
function callsOf(adapter: object): [string, Call][] {
  const calls: [string, Call][] = [];
  const seen = new Set<string>();
  for (
    let layer: object | null = adapter;
    layer !== null && layer !== Object.prototype;
    layer = Object.getPrototypeOf(layer) as object | null
  ) {
    for (const name of Object.getOwnPropertyNames(layer)) {
      if (name === 'constructor' || seen.has(name)) continue;
      seen.add(name);
      const value: unknown = Object.getOwnPropertyDescriptor(layer, name)?.value;
      if (typeof value === 'function') calls.push([name, value as Call]);
    }
  }
  return calls;
}

type Intersection<U> = (U extends unknown ? (part: U) => void : never) extends (
  part: infer I,
) => void
  ? I
  : never;
