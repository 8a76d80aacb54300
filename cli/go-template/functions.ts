import { formatValue } from './format-verb.ts';
import { sprint, sprintf, sprintln } from './printf.ts';
import { basicKind, goType, isMap, truth, type Value } from './values.ts';

/**
 * The functions a template can call: Go's text/template builtins that kubectl's templates
 * use, and kubectl's `base64decode`. `and` and `or` are not here: they evaluate their
 * arguments one at a time and stop early, so the executor runs them (exec.ts).
 */
export interface Builtin {
  /** How many arguments it takes: at least `min`, at most `max` (no `max`: any number). */
  min: number;
  max?: number;
  /** How many of the first arguments must be strings (Go's typed parameters). */
  strings?: number;
  /** Throws an Error whose message Go would give after `error calling <name>: `. */
  call(args: Value[]): Value;
}

export const BUILTINS: Readonly<Record<string, Builtin>> = {
  index: { min: 1, call: ([item, ...keys]) => index(item, keys) },
  slice: { min: 1, call: ([item, ...indexes]) => slice(item, indexes) },
  len: { min: 1, max: 1, call: ([item]) => length(item) },
  not: { min: 1, max: 1, call: ([value]) => !truth(value) },
  eq: { min: 1, call: ([first, ...others]) => equal(first, others) },
  ne: { min: 2, max: 2, call: ([a, b]) => !equal(a, [b]) },
  lt: { min: 2, max: 2, call: ([a, b]) => compare(a, b) < 0 },
  le: { min: 2, max: 2, call: ([a, b]) => compare(a, b) <= 0 },
  gt: { min: 2, max: 2, call: ([a, b]) => compare(a, b) > 0 },
  ge: { min: 2, max: 2, call: ([a, b]) => compare(a, b) >= 0 },
  print: { min: 0, call: (args) => sprint(args) },
  println: { min: 0, call: (args) => sprintln(args) },
  printf: { min: 1, strings: 1, call: ([format, ...args]) => sprintf(format as string, args) },
  base64decode: { min: 1, max: 1, strings: 1, call: ([text]) => base64decode(text as string) },
};

/** Every function name a template may use (the parser refuses others). */
export const FUNCTION_NAMES: ReadonlySet<string> = new Set([...Object.keys(BUILTINS), 'and', 'or']);

const isNil = (value: Value) => value === undefined || value === null;

/** `index .metadata.labels "app"`, `index .items 0`, `index .a 1 "b"` (a[1]["b"]). */
function index(item: Value, keys: Value[]): Value {
  if (isNil(item)) throw new Error('index of untyped nil');
  let value: Value = item;
  for (const key of keys) {
    if (isNil(value)) throw new Error('index of nil pointer');
    if (isMap(value)) {
      if (typeof key !== 'string')
        throw new Error(`value has type ${goType(key)}; should be string`);
      value = Object.hasOwn(value, key) ? value[key] : undefined;
    } else if (Array.isArray(value) || typeof value === 'string') {
      const items = typeof value === 'string' ? [...Buffer.from(value)] : value;
      value = items[position(key, items.length)];
    } else throw new Error(`can't index item of type ${goType(value)}`);
  }
  return value;
}

/** A whole number in [0, length), or in [0, length] for a slice's `bound`. */
function position(key: Value, length: number, bound = false): number {
  if (typeof key !== 'number' || !Number.isInteger(key)) {
    throw new Error(`cannot index slice/array with type ${goType(key)}`);
  }
  if (key < 0 || key > length || (key === length && !bound)) {
    throw new Error(`index out of range: ${key}`);
  }
  return key;
}

/** `slice x 1 2` is x[1:2]; a string is cut in bytes, as Go's. */
function slice(item: Value, indexes: Value[]): Value {
  if (isNil(item)) throw new Error('slice of untyped nil');
  if (indexes.length > 3) throw new Error(`too many slice indexes: ${indexes.length}`);
  if (typeof item === 'string' && indexes.length === 3) {
    throw new Error('cannot 3-index slice a string');
  }
  if (typeof item !== 'string' && !Array.isArray(item)) {
    throw new Error(`can't slice item of type ${goType(item)}`);
  }
  const bytes = typeof item === 'string' ? Buffer.from(item) : undefined;
  const length = bytes?.length ?? (item as Value[]).length;
  const [from = 0, to = length, capacity = length] = indexes.map((i) => position(i, length, true));
  if (from > to) throw new Error(`invalid slice index: ${from} > ${to}`);
  if (to > capacity) throw new Error(`invalid slice index: ${to} > ${capacity}`);
  return bytes ? bytes.subarray(from, to).toString('utf8') : (item as Value[]).slice(from, to);
}

/** Strings count bytes, as Go's len does. */
function length(item: Value): number {
  if (isNil(item)) throw new Error('len of nil pointer');
  if (typeof item === 'string') return Buffer.byteLength(item);
  if (Array.isArray(item)) return item.length;
  if (isMap(item)) return Object.keys(item).length;
  throw new Error(`len of type ${goType(item)}`);
}

/**
 * `eq a b c` is a == b || a == c, as Go's. No value (a missing key) equals nothing but nil and
 * no value; values of different kinds, or lists and maps, cannot be compared.
 */
function equal(first: Value, others: Value[]): boolean {
  if (others.length === 0) throw new Error('missing argument for comparison');
  const kind = basicKind(first);
  for (const other of others) {
    const otherKind = basicKind(other);
    if (kind !== otherKind) {
      if (kind !== 'invalid' && otherKind !== 'invalid') {
        throw new Error('incompatible types for comparison');
      }
      continue;
    }
    if (kind === 'other') {
      throw new Error(`non-comparable type ${formatValue(first)}: ${goType(first)}`);
    }
    if (kind === 'invalid' || first === other) return true;
  }
  return false;
}

/** Numbers with numbers, strings with strings (byte order); anything else is an error. */
function compare(a: Value, b: Value): number {
  const kind = basicKind(a);
  const otherKind = basicKind(b);
  for (const k of [kind, otherKind]) {
    if (k !== 'number' && k !== 'string') throw new Error('invalid type for comparison');
  }
  if (kind !== otherKind) throw new Error('incompatible types for comparison');
  if (kind === 'string') return Buffer.compare(Buffer.from(a as string), Buffer.from(b as string));
  return (a as number) - (b as number);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?/;

/** kubectl's `base64decode`: standard, padded base64 only (as Go's StdEncoding). */
function base64decode(text: string): string {
  const clean = text.replace(/[\r\n]/g, '');
  const valid = BASE64.exec(clean)?.[0].length ?? 0;
  if (valid !== clean.length) {
    throw new Error(`base64 decode failed: illegal base64 data at input byte ${valid}`);
  }
  return Buffer.from(clean, 'base64').toString('utf8');
}
