/**
 * The constants a template writes: Go's quoted strings (with Go's escapes), raw strings,
 * character constants (a number: `'a'` is 97) and numbers (`42`, `0x1f`, `0o17`, `1_000`,
 * `1.5e3`).
 */

/** A number constant and whether Go reads it as a float (`1.0`, `1e3`) rather than an int. */
export interface NumberConstant {
  value: number;
  isFloat: boolean;
}

const SIMPLE_ESCAPES: Record<string, number> = {
  a: 7,
  b: 8,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
  '\\': 92,
};

/** The value of a `"..."` or `'...'` literal; throws a message when an escape is invalid. */
export function unquote(text: string): string {
  const quote = text[0] as string;
  const body = text.slice(1, -1);
  const bytes: number[] = [];
  for (let i = 0; i < body.length; i++) {
    const c = body[i] as string;
    if (c !== '\\') {
      const code = body.codePointAt(i) ?? 0;
      if (code > 0xffff) i++;
      bytes.push(...Buffer.from(String.fromCodePoint(code)));
      continue;
    }
    const e = body[++i] ?? '';
    const simple = SIMPLE_ESCAPES[e];
    if (simple !== undefined || e === quote) {
      bytes.push(simple ?? quote.charCodeAt(0));
      continue;
    }
    const digits = { x: 2, u: 4, U: 8 }[e] ?? (/[0-7]/.test(e) ? 3 : 0);
    const hex = e === 'x' || e === 'u' || e === 'U';
    const run = hex ? body.slice(i + 1, i + 1 + digits) : body.slice(i, i + digits);
    const valid = hex ? /^[0-9a-fA-F]+$/ : /^[0-7]+$/;
    if (digits === 0 || run.length !== digits || !valid.test(run)) {
      throw new Error(`invalid escape '\\${e}' in ${text}`);
    }
    const value = Number.parseInt(run, hex ? 16 : 8);
    i += hex ? digits : digits - 1;
    if (e === 'u' || e === 'U') {
      if (value > 0x10ffff || (value >= 0xd800 && value < 0xe000)) {
        throw new Error(`invalid escape '\\${e}${run}' in ${text}: not a Unicode character`);
      }
      bytes.push(...Buffer.from(String.fromCodePoint(value)));
    } else if (value > 255) {
      throw new Error(`invalid escape '\\${run}' in ${text}: more than a byte`);
    } else bytes.push(value);
  }
  return Buffer.from(bytes).toString('utf8');
}

/** A raw string: its text as written, less carriage returns (as Go drops them). */
export function unquoteRaw(text: string): string {
  return text.slice(1, -1).replaceAll('\r', '');
}

/** `'a'` is the number 97. */
export function characterConstant(text: string): NumberConstant {
  const value = unquote(text);
  const code = value.codePointAt(0);
  if (code === undefined || String.fromCodePoint(code) !== value) {
    throw new Error(`malformed character constant: ${text}`);
  }
  return { value: code, isFloat: false };
}

export function numberConstant(text: string): NumberConstant {
  if (text.endsWith('i')) throw new Error(`complex numbers are not supported: ${text}`);
  const illegal = () => new Error(`illegal number syntax: "${text}"`);
  if (/__|^[+-]?_|_$|_\./.test(text)) throw illegal();
  const plain = text.replaceAll('_', '');
  const sign = plain.startsWith('-') ? -1 : 1;
  const unsigned = plain.replace(/^[+-]/, '');
  const radix = [
    [/^0[xX][0-9a-fA-F]+$/, 16],
    [/^0[oO][0-7]+$/, 8],
    [/^0[bB][01]+$/, 2],
    [/^0[0-7]+$/, 8],
  ] as const;
  for (const [pattern, base] of radix) {
    if (pattern.test(unsigned)) {
      const digits = unsigned.replace(/^0[xXoObB]?/, '');
      return { value: sign * Number.parseInt(digits, base), isFloat: false };
    }
  }
  if (/^\d+$/.test(unsigned)) {
    if (/^0\d/.test(unsigned)) throw illegal(); // 08, 09: not octal, not decimal
    return { value: sign * Number(unsigned), isFloat: false };
  }
  if (/^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(unsigned)) {
    return { value: sign * Number(unsigned), isFloat: true };
  }
  throw illegal();
}
