/**
 * Plain checks for structured input (a merged agent configuration, a JSON reply), in place of
 * a validation library: the agent runs on every VM, and zod alone was 0.78 MB of its 1.33 MB
 * bundle and ~9 MB of its resident memory (issue 27). A reader returns the value it read and
 * adds a problem, naming where (`timing.pingInterval`, `hosts.0.address`) and what, for
 * anything wrong; the value is used only when no problem was found. An object reader visits
 * its fields in order and reports every problem, not only the first.
 */

export interface Problem {
  /** Dot-separated: `auth.mode`, `ip.0`; empty for the value itself. */
  path: string;
  message: string;
}

export type Reader<T> = (value: unknown, path: string, problems: Problem[]) => T;

/** A reader of a mapping, which knows its fields (so a test can list the keys it accepts). */
export interface ObjectReader<T> extends Reader<T> {
  readonly fields: Readonly<Record<string, Reader<unknown>>>;
}

type Read<F> = { [K in keyof F]: F[K] extends Reader<infer T> ? T : never };

/** The value as a message shows it: text quoted, anything else as JSON, long ones cut. */
export function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const cut = text.length > 80 ? `${text.slice(0, 77)}...` : text;
  return typeof value === 'string' ? `'${cut}'` : cut;
}

export function join(path: string, key: string | number): string {
  return path === '' ? String(key) : `${path}.${key}`;
}

export function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Runs `reader` over `value`: the value read, or every problem found. */
export function readAll<T>(
  reader: Reader<T>,
  value: unknown,
): { ok: true; value: T } | { ok: false; problems: Problem[] } {
  const problems: Problem[] = [];
  const read = reader(value, '', problems);
  return problems.length === 0 ? { ok: true, value: read } : { ok: false, problems };
}

/**
 * A mapping with these fields, each read in order; absent (undefined) reads as `{}`, so the
 * fields' own defaults apply. `strict`: a key no field has is a problem, not ignored.
 */
export function object<F extends Record<string, Reader<unknown>>>(
  fields: F,
  options: { strict?: boolean } = {},
): ObjectReader<Read<F>> {
  const read = (value: unknown, path: string, problems: Problem[]): Read<F> => {
    const input = value === undefined ? {} : value;
    const out: Record<string, unknown> = {};
    if (!isMapping(input)) {
      problems.push({ path, message: `must be a mapping, got ${shown(input)}` });
      return out as Read<F>;
    }
    for (const [key, field] of Object.entries(fields)) {
      const item = field(input[key], join(path, key), problems);
      if (item !== undefined) out[key] = item;
    }
    if (options.strict) {
      for (const key of Object.keys(input)) {
        if (!Object.hasOwn(fields, key)) {
          problems.push({ path: join(path, key), message: 'is not an allowed field' });
        }
      }
    }
    return out as Read<F>;
  };
  return Object.assign(read, { fields });
}

/** Absent stays undefined; anything else is read. */
export function optional<T>(reader: Reader<T>): Reader<T | undefined> {
  return (value, path, problems) =>
    value === undefined ? undefined : reader(value, path, problems);
}

/** Absent reads as `fallback`. */
export function withDefault<T>(reader: Reader<T>, fallback: T): Reader<T> {
  return (value, path, problems) =>
    value === undefined ? fallback : reader(value, path, problems);
}

/**
 * Text that passes `test`; `message` says what it must be, and is followed by the value
 * unless `secret` (a token is never echoed).
 */
export function text(
  test: (value: string) => boolean,
  message: string,
  options: { secret?: boolean } = {},
): Reader<string> {
  return (value, path, problems) => {
    if (typeof value !== 'string' || !test(value)) {
      problems.push({
        path,
        message: options.secret ? message : `${message}, got ${shown(value)}`,
      });
    }
    return value as string;
  };
}

export const nonEmpty = (value: string): boolean => value.length > 0;

/** true or false. */
export const flag: Reader<boolean> = (value, path, problems) => {
  if (typeof value !== 'boolean') {
    problems.push({ path, message: `must be true or false, got ${shown(value)}` });
  }
  return value as boolean;
};

/** A list whose items each pass `item`, at least `min` of them. */
export function list<T>(item: Reader<T>, min = 0): Reader<T[]> {
  return (value, path, problems) => {
    if (!Array.isArray(value)) {
      problems.push({ path, message: `must be a list, got ${shown(value)}` });
      return [];
    }
    if (value.length < min) {
      problems.push({ path, message: `must have at least ${min} item(s), got none` });
    }
    return value.map((entry, index) => item(entry, join(path, index), problems));
  };
}

/** A mapping of keys that pass `keyTest` (`keyMessage` says what a key must be) to values. */
export function record<T>(
  keyTest: (key: string) => boolean,
  keyMessage: string,
  item: Reader<T>,
): Reader<Record<string, T>> {
  return (value, path, problems) => {
    if (!isMapping(value)) {
      problems.push({ path, message: `must be a mapping, got ${shown(value)}` });
      return {};
    }
    const out: Record<string, T> = {};
    for (const [key, entry] of Object.entries(value)) {
      const at = join(path, key);
      if (!keyTest(key)) problems.push({ path: at, message: `${keyMessage}, got ${shown(key)}` });
      // A data property whatever the key: `out[key] =` would set the prototype for `__proto__`.
      Object.defineProperty(out, key, {
        value: item(entry, at, problems),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };
}
