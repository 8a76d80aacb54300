import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';

/**
 * dynalite parses every `ConditionExpression`, `KeyConditionExpression`, `FilterExpression` and
 * `UpdateExpression` with its PEG parsers on every request: half of the store thread's CPU in a
 * burst of connects (docs/benchmarks.md, "Local end to end"), although the registrar sends a
 * few dozen expression texts with new names and values each time. This cache parses each
 * (text, attribute name keys, value keys and types) once, with a stand-in for every attribute
 * name, and then hands out a copy of that parse with the request's own names and values.
 *
 * Why that is the same as parsing (checked under `REGISTRAR_DYNALITE_PARSE_CHECK`, which the
 * test suite sets: the first CHECKED_HITS hits of every key, then one in CHECK_EVERY):
 * - the parsers resolve `#n` to its string and `:v` to the request's value object itself, so a
 *   parse is its tree plus those, which the copy swaps: a stand-in name (a string no expression
 *   can spell) by its name, a value by identity;
 * - the checks the parsers make on names compare them with each other and with the names the
 *   text spells out (overlapping paths, distinct operands). Stand-ins are all different, so a
 *   request whose names repeat one another, or repeat a name the text spells, is not cached;
 * - the checks on values look only at their top-level type (`size`, `+`, `list_append`, `ADD`,
 *   ...), which is part of the key; the two that look at the values themselves, `BETWEEN`
 *   (lower <= upper) and `attribute_type` (a type name), are never cached;
 * - what a parse does to the request besides returning the tree (crossing used names and values
 *   off `unusedAttrNames` / `unusedAttrVals`) is recorded on the first parse and replayed;
 * - a parse that fails (a syntax error or a message) is never cached: the request's own parse
 *   gives the message.
 */

interface ParseContext {
  attrNames?: Record<string, string>;
  attrVals?: Record<string, Record<string, unknown>>;
  unusedAttrNames?: Record<string, boolean>;
  unusedAttrVals?: Record<string, boolean>;
  isKeyCondition?: boolean;
  [other: string]: unknown;
}

interface PegParser {
  parse(text: string, options: { context: ParseContext }): unknown;
}

interface CachedParse {
  /** Hits so far: which ones the check parses afresh. */
  hits: number;
  /** The parse with stand-in names and the first request's values. */
  tree: unknown;
  /** The first request's value objects, by key: what the copy replaces. */
  values: Record<string, unknown>;
  /** Every name the text spells out itself: a request's `#n` naming one of them is not cached. */
  spelled: Set<string>;
  usedNames: string[];
  usedValues: string[];
}

/**
 * The check parses afresh the first CHECKED_HITS hits of each key (every expression shape the
 * suite sends, with many requests' own names and values), then one hit in CHECK_EVERY. Checking
 * every hit made the PEG parse the largest CPU cost of the whole suite again (about a quarter
 * of a store-heavy file's), for no shape the first hits had not already met.
 */
const CHECKED_HITS = 16;
const CHECK_EVERY = 64;

/** Enough for every expression the registrar sends, with room; the oldest go first past it. */
const MAX_ENTRIES = 1_000;
/** Expressions whose parse depends on the values themselves, not only their types. */
const VALUE_DEPENDENT = /between|attribute_type/i;
const ATTRIBUTE_TYPES = ['S', 'N', 'B', 'NULL', 'BOOL', 'SS', 'NS', 'BS', 'L', 'M'];
/** Stand-in names start with a character no expression can spell (nor `#n` resolve to here). */
const STAND_IN = '\u0001';
/** The identifiers a text spells out (not `#n`, not `:v`): the parsers' own name syntax. */
const SPELLED_NAME = /(?<![#:\w])[a-zA-Z_][\w]*/g;

/** The type dynalite's parsers see for a value (their `getImmediateType`). */
function valueType(value: Record<string, unknown>): string {
  for (const type of ATTRIBUTE_TYPES) if (value[type] != null) return type;
  return '?';
}

function cacheKey(parser: string, text: string, context: ParseContext): string {
  let key = `${parser}\u0000${context.isKeyCondition ? 'K' : ''}\u0000${text}\u0000`;
  for (const name of Object.keys(context.attrNames ?? {})) key += `${name},`;
  for (const [name, value] of Object.entries(context.attrVals ?? {})) {
    key += `\u0000${name}=${valueType(value)}`;
  }
  return key;
}

/** Whether the request's names keep the stand-ins' promise: all different, none spelled. */
function namesAreDistinct(names: Record<string, string> | undefined, spelled: Set<string>) {
  const seen = new Set<string>();
  for (const name of Object.values(names ?? {})) {
    if (seen.has(name) || spelled.has(name) || name.startsWith(STAND_IN)) return false;
    seen.add(name);
  }
  return true;
}

/**
 * A deep copy of a parse: stand-in names (as strings and as keys) swapped for `names`', the
 * objects in `values` for theirs; prototypes kept (dynalite makes some maps prototype-free).
 */
function copyTree(
  node: unknown,
  names: Record<string, string>,
  values: Map<unknown, unknown>,
): unknown {
  if (typeof node === 'string') {
    return node.startsWith(STAND_IN) ? names[node.slice(STAND_IN.length)] : node;
  }
  if (node === null || typeof node !== 'object') return node;
  const value = values.get(node);
  if (value !== undefined) return value;
  if (Array.isArray(node)) return node.map((child) => copyTree(child, names, values));
  const copy = Object.create(Object.getPrototypeOf(node)) as Record<string, unknown>;
  for (const [key, child] of Object.entries(node)) {
    copy[copyTree(key, names, values) as string] = copyTree(child, names, values);
  }
  return copy;
}

function crossOff(unused: Record<string, boolean> | undefined, used: string[]): void {
  if (!unused) return;
  for (const key of used) delete unused[key];
}

function allUnused(all: Record<string, unknown> | undefined): Record<string, boolean> {
  return Object.fromEntries(Object.keys(all ?? {}).map((key) => [key, true]));
}

export interface ExpressionCacheStats {
  hits: number;
  misses: number;
  /** Parses not cached: value-dependent expressions, repeated names and failed parses. */
  uncached: number;
  /** Hits the check parsed afresh (zero without the check). */
  checked: number;
}

export interface CachingParser {
  parse: PegParser['parse'];
  stats: ExpressionCacheStats;
}

/**
 * A `parse` with the cache in front of `parser`'s. With `check`, a hit also parses afresh (the
 * first CHECKED_HITS of each key, then one in CHECK_EVERY) and throws if the two differ in tree
 * or in what they crossed off: the test suite's guard.
 */
export function cachingParser(name: string, parser: PegParser, check = false): CachingParser {
  const parseFresh = parser.parse.bind(parser);
  const cache = new Map<string, CachedParse>();
  const stats: ExpressionCacheStats = { hits: 0, misses: 0, uncached: 0, checked: 0 };
  const checks = (cached: CachedParse) =>
    check && (cached.hits <= CHECKED_HITS || cached.hits % CHECK_EVERY === 0);

  const fromCache = (cached: CachedParse, context: ParseContext) => {
    const values = new Map<unknown, unknown>();
    for (const [key, old] of Object.entries(cached.values))
      values.set(old, context.attrVals?.[key]);
    crossOff(context.unusedAttrNames, cached.usedNames);
    crossOff(context.unusedAttrVals, cached.usedValues);
    return copyTree(cached.tree, context.attrNames ?? {}, values);
  };

  const checked = (cached: CachedParse, text: string, options: { context: ParseContext }) => {
    const { context } = options;
    stats.checked += 1;
    const names = { ...context.unusedAttrNames };
    const values = { ...context.unusedAttrVals };
    const fresh = parseFresh(text, options);
    const copy = fromCache(cached, { ...context, unusedAttrNames: names, unusedAttrVals: values });
    if (
      !isDeepStrictEqual(copy, fresh) ||
      !isDeepStrictEqual(names, { ...context.unusedAttrNames }) ||
      !isDeepStrictEqual(values, { ...context.unusedAttrVals })
    ) {
      throw new Error(`dynalite expression cache: a cached parse differs from parsing ${text}`);
    }
    return copy;
  };

  /** The first parse of a key, with stand-in names; undefined when it cannot be cached. */
  const parseOnce = (text: string, context: ParseContext): CachedParse | undefined => {
    const standIns = Object.fromEntries(
      Object.keys(context.attrNames ?? {}).map((key) => [key, `${STAND_IN}${key}`]),
    );
    const unusedAttrNames = allUnused(context.attrNames);
    const unusedAttrVals = allUnused(context.attrVals);
    let tree: unknown;
    try {
      tree = parseFresh(text, {
        context: { ...context, attrNames: standIns, unusedAttrNames, unusedAttrVals },
      });
    } catch {
      return undefined;
    }
    // A message instead of a tree is a refused expression.
    if (typeof tree === 'string') return undefined;
    return {
      hits: 0,
      tree,
      values: { ...context.attrVals },
      spelled: new Set(text.match(SPELLED_NAME) ?? []),
      usedNames: Object.keys(standIns).filter((key) => !(key in unusedAttrNames)),
      usedValues: Object.keys(context.attrVals ?? {}).filter((key) => !(key in unusedAttrVals)),
    };
  };

  const parse = (text: string, options: { context: ParseContext }): unknown => {
    const { context } = options;
    if (VALUE_DEPENDENT.test(text)) {
      stats.uncached += 1;
      return parseFresh(text, options);
    }
    const key = cacheKey(name, text, context);
    let cached = cache.get(key);
    if (cached) {
      if (!namesAreDistinct(context.attrNames, cached.spelled)) {
        stats.uncached += 1;
        return parseFresh(text, options);
      }
      stats.hits += 1;
      cached.hits += 1;
      return checks(cached) ? checked(cached, text, options) : fromCache(cached, context);
    }
    cached = parseOnce(text, context);
    if (!cached || !namesAreDistinct(context.attrNames, cached.spelled)) {
      stats.uncached += 1;
      return parseFresh(text, options);
    }
    stats.misses += 1;
    if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
    cache.set(key, cached);
    return check ? checked(cached, text, options) : fromCache(cached, context);
  };

  return { parse, stats };
}

/** dynalite's parsers this cache goes in front of. */
export const PARSERS = ['conditionParser', 'updateParser'] as const;
export type ParserName = (typeof PARSERS)[number];

/** On an installed `parse`: the parser's own, for tests and for a second install to find. */
const FRESH = Symbol.for('workload-registrar.dynalite-fresh-parse');
type InstalledParse = PegParser['parse'] & {
  [FRESH]?: PegParser['parse'];
  stats?: ExpressionCacheStats;
};

const requireCjs = createRequire(import.meta.url);

/**
 * The dynalite release this cache was written against and test/unit/dynalite-expression-cache
 * .test.ts checks: the parsers' module paths and what a parse does to its context are internals
 * a minor release may change, so package.json pins exactly this version.
 */
export const COVERED_DYNALITE_VERSION = '4.0.0';

/** The version of the dynalite that `require` finds. */
export function installedDynaliteVersion(): string {
  return (requireCjs('dynalite/package.json') as { version: string }).version;
}

/** dynalite's module for `name`, whose `parse` its validations call. */
export function dynaliteParser(name: ParserName): PegParser {
  return requireCjs(`dynalite/db/${name}`) as PegParser;
}

/** dynalite's own parse for `name`, whether or not the cache is installed. */
export function freshParse(name: ParserName): PegParser['parse'] {
  const parse = dynaliteParser(name).parse as InstalledParse;
  return parse[FRESH] ?? parse;
}

/**
 * Puts the cache in front of dynalite's condition and update parsers, for every dynalite in
 * this process (thread): once, however many stores start. Returns the counters.
 */
export function installExpressionCache(
  check = process.env.REGISTRAR_DYNALITE_PARSE_CHECK === '1',
  version = installedDynaliteVersion(),
): Record<ParserName, ExpressionCacheStats> {
  const stats = {} as Record<ParserName, ExpressionCacheStats>;
  // Another dynalite (a lock file changed by hand) keeps its own parsers: slower, never wrong.
  if (version !== COVERED_DYNALITE_VERSION) return stats;
  for (const name of PARSERS) {
    const parser = dynaliteParser(name);
    let parse = parser.parse as InstalledParse;
    if (!parse[FRESH]) {
      const caching = cachingParser(name, { parse: freshParse(name) }, check);
      parse = Object.assign(caching.parse, { [FRESH]: freshParse(name), stats: caching.stats });
      parser.parse = parse;
    }
    stats[name] = parse.stats as ExpressionCacheStats;
  }
  return stats;
}
