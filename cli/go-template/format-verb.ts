import { formatFloat } from './go-float.ts';
import { goType, isInt, isMap, sortedKeys, type Value } from './values.ts';

/**
 * One value under one of Go's fmt verbs: %v %s %q %d %f %e %g %t %x %X %o %b %c %U, with flags
 * `-+# 0`, a width and a precision. `%v` of a list is `[a b]`, of a map `map[k:v]` (keys
 * sorted), of nil `<nil>`; a list or map takes the verb for each of its values, as Go's fmt.
 * A verb that does not fit its value prints as Go does: `%!d(string=web)`. %d takes whole
 * numbers only; %f, %e and %g take any (Go refuses a whole one there, though kubectl decodes
 * every whole JSON number as an int).
 */
export interface Spec {
  minus: boolean;
  plus: boolean;
  sharp: boolean;
  space: boolean;
  zero: boolean;
  width: number | undefined;
  precision: number | undefined;
  verb: string;
}

export const PLAIN: Spec = {
  minus: false,
  plus: false,
  sharp: false,
  space: false,
  zero: false,
  width: undefined,
  precision: undefined,
  verb: 'v',
};

/** A value as `{{.}}` and `%v` print it. */
export function formatValue(value: Value): string {
  return format(value, PLAIN);
}

export function format(value: Value, spec: Spec): string {
  if (Array.isArray(value)) return `[${value.map((item) => format(item, spec)).join(' ')}]`;
  if (isMap(value)) {
    const pairs = sortedKeys(value).map(
      (key) => `${format(key, spec)}:${format(value[key], spec)}`,
    );
    return `map[${pairs.join(' ')}]`;
  }
  const { verb } = spec;
  if (value === undefined || value === null) {
    return verb === 'v' ? pad('<nil>', spec) : `%!${verb}(<nil>)`;
  }
  if (typeof value === 'boolean') {
    return verb === 'v' || verb === 't' ? pad(String(value), spec) : badVerb(value, verb);
  }
  if (typeof value === 'string') return formatString(value, spec);
  return formatNumber(value, spec);
}

function badVerb(value: Value, verb: string): string {
  return `%!${verb}(${goType(value)}=${formatValue(value)})`;
}

function formatString(value: string, spec: Spec): string {
  const { verb, precision } = spec;
  const cut = precision === undefined ? value : [...value].slice(0, precision).join('');
  if (verb === 'v' || verb === 's') return pad(spec.sharp && verb === 'v' ? quote(cut) : cut, spec);
  if (verb === 'q') return pad(quote(cut), spec);
  if (verb === 'x' || verb === 'X') {
    const hex = Buffer.from(value).toString('hex');
    return pad(verb === 'X' ? hex.toUpperCase() : hex, spec);
  }
  return badVerb(value, verb);
}

function formatNumber(value: number, spec: Spec): string {
  const { verb } = spec;
  const whole = isInt(value);
  if ('eEfFgG'.includes(verb) || (verb === 'v' && !whole)) {
    const text = Number.isFinite(value)
      ? formatFloat(Math.abs(value), verb === 'v' ? 'g' : verb, spec.precision)
      : Number.isNaN(value)
        ? 'NaN'
        : 'Inf';
    return signed(text, value < 0 || Object.is(value, -0), spec, Number.isFinite(value));
  }
  if (!whole) return badVerb(value, verb);
  if (verb === 'c')
    return pad(String.fromCodePoint(value >= 0 && value <= 0x10ffff ? value : 0xfffd), spec);
  if (verb === 'q') return pad(`'${quote(String.fromCodePoint(value)).slice(1, -1)}'`, spec);
  if (verb === 'U') return pad(`U+${value.toString(16).toUpperCase().padStart(4, '0')}`, spec);
  const base = { v: 10, d: 10, b: 2, o: 8, O: 8, x: 16, X: 16 }[verb];
  if (base === undefined) return badVerb(value, verb);
  let digits = Math.abs(value).toString(base);
  if (verb === 'X') digits = digits.toUpperCase();
  if (spec.precision !== undefined) digits = digits.padStart(spec.precision, '0');
  const prefix =
    verb === 'O' ? '0o' : spec.sharp ? ({ x: '0x', X: '0X', o: '0', b: '0b' }[verb] ?? '') : '';
  return signed(
    prefix + digits,
    value < 0,
    { ...spec, zero: spec.zero && spec.precision === undefined },
    true,
  );
}

/** A number with its sign (or `+`, or a space, as the flags ask), padded to the width. */
function signed(text: string, negative: boolean, spec: Spec, zeroPads: boolean): string {
  const sign = negative ? '-' : spec.plus ? '+' : spec.space ? ' ' : '';
  const width = spec.width ?? 0;
  if (spec.zero && zeroPads && !spec.minus && sign.length + text.length < width) {
    return sign + text.padStart(width - sign.length, '0');
  }
  return pad(sign + text, spec);
}

/** Padded to the width in characters: spaces before, after with `-`, zeros with `0`. */
function pad(text: string, spec: Spec): string {
  const missing = (spec.width ?? 0) - [...text].length;
  if (missing <= 0) return text;
  if (spec.minus) return text + ' '.repeat(missing);
  return (spec.zero ? '0' : ' ').repeat(missing) + text;
}

const ESCAPES: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '\\': '\\\\',
  '"': '\\"',
};

/** A Go double-quoted string literal, as `%q` and strconv.Quote write it. */
export function quote(text: string): string {
  let out = '"';
  for (const c of text) {
    const code = c.codePointAt(0) ?? 0;
    if (ESCAPES[c] !== undefined) out += ESCAPES[c];
    else if (/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(c)) out += c;
    else if (code < 0x80) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else if (code < 0x10000) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += `\\U${code.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}
