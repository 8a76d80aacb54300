import { format, formatValue, PLAIN, type Spec } from './format-verb.ts';
import { goType, type Value } from './values.ts';

/**
 * Go's fmt.Sprintf, Sprint and Sprintln for the template functions `printf`, `print` and
 * `println`: `%-10s`, `%5.1f`, `*` takes a width or precision from the arguments, `%%` is a
 * percent sign; a missing value prints `%!d(MISSING)` and values left over
 * `%!(EXTRA type=value, ...)`, as Go's.
 */

/** An argument printf was not given. */
const MISSING = Symbol('missing');

/** `print`: the values, a space between two when neither is a string. */
export function sprint(args: readonly Value[]): string {
  let out = '';
  args.forEach((arg, i) => {
    const isString = typeof arg === 'string';
    if (i > 0 && !isString && typeof args[i - 1] !== 'string') out += ' ';
    out += formatValue(arg);
  });
  return out;
}

/** `println`: the values, spaces between, and a newline. */
export function sprintln(args: readonly Value[]): string {
  return `${args.map(formatValue).join(' ')}\n`;
}

export function sprintf(template: string, args: readonly Value[]): string {
  let out = '';
  let next = 0;
  let i = 0;
  const argument = (): Value | typeof MISSING => (next < args.length ? args[next++] : MISSING);
  while (i < template.length) {
    const percent = template.indexOf('%', i);
    if (percent === -1) {
      out += template.slice(i);
      break;
    }
    out += template.slice(i, percent);
    i = percent + 1;
    const spec: Spec = { ...PLAIN };
    for (
      let flag = template[i];
      flag !== undefined && '-+# 0'.includes(flag);
      flag = template[++i]
    ) {
      if (flag === '-') spec.minus = true;
      else if (flag === '+') spec.plus = true;
      else if (flag === '#') spec.sharp = true;
      else if (flag === ' ') spec.space = true;
      else spec.zero = true;
    }
    const number = (): number | undefined => {
      if (template[i] === '*') {
        i++;
        const value = argument();
        return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
      }
      const digits = /^\d+/.exec(template.slice(i))?.[0];
      if (digits === undefined) return undefined;
      i += digits.length;
      return Number(digits);
    };
    spec.width = number();
    if (spec.width !== undefined && spec.width < 0) {
      spec.minus = true;
      spec.width = -spec.width;
    }
    if (template[i] === '.') {
      i++;
      spec.precision = number() ?? 0;
    }
    const verb = String.fromCodePoint(template.codePointAt(i) ?? 0);
    if (i >= template.length) {
      out += '%!(NOVERB)';
      break;
    }
    i += verb.length;
    if (verb === '%') {
      out += '%';
      continue;
    }
    const value = argument();
    out += value === MISSING ? `%!${verb}(MISSING)` : format(value, { ...spec, verb });
  }
  if (next < args.length) {
    const extra = args
      .slice(next)
      .map((arg) => (arg == null ? '<nil>' : `${goType(arg)}=${formatValue(arg)}`));
    out += `%!(EXTRA ${extra.join(', ')})`;
  }
  return out;
}
