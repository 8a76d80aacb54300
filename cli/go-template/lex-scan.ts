/** The pieces of Go's lexer that read one word of an action. */

/** Reports a lexical error at a position; never returns. */
export type Fail = (pos: number, message: string) => never;

export const isSpace = (c: string | undefined) =>
  c === ' ' || c === '\t' || c === '\r' || c === '\n';
export const isAlphaNumeric = (c: string | undefined) =>
  c !== undefined && /[\p{L}\p{Nd}_]/u.test(c);

/** `U+0023 '#'`, as Go's `%#U` shows a character. */
export function goRune(c: string): string {
  const code = c.codePointAt(0) ?? 0;
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')} '${c}'`;
}

/** Whether a field, variable or identifier may end at `pos`. */
export function atTerminator(source: string, pos: number): boolean {
  const c = source[pos];
  return c === undefined || isSpace(c) || '.,|:()'.includes(c) || source.startsWith('}}', pos);
}

/** The end of a "double-quoted" string or 'c'haracter constant starting at `pos`. */
export function quoted(source: string, pos: number, fail: Fail): number {
  const quote = source[pos];
  const what = quote === '"' ? 'quoted string' : 'character constant';
  let end = pos + 1;
  for (;;) {
    const escaped = source[end] === '\\';
    if (escaped) end++;
    const c = source[end];
    if (c === undefined || c === '\n') fail(pos, `unterminated ${what}`);
    end++;
    if (c === quote && !escaped) return end;
  }
}

/** Go's number syntax, loosely: sign, base prefix, digits with `_`, fraction, exponent. */
export function scanNumber(source: string, pos: number): number {
  let end = pos;
  const accept = (chars: string) => {
    const c = source[end];
    if (c !== undefined && chars.includes(c)) {
      end++;
      return true;
    }
    return false;
  };
  const acceptRun = (chars: string) => {
    while (accept(chars));
  };
  accept('+-');
  let digits = '0123456789_';
  if (accept('0')) {
    if (accept('xX')) digits = '0123456789abcdefABCDEF_';
    else if (accept('oO')) digits = '01234567_';
    else if (accept('bB')) digits = '01_';
  }
  acceptRun(digits);
  if (accept('.')) acceptRun(digits);
  if (digits.length === 11 && accept('eE')) {
    accept('+-');
    acceptRun('0123456789_');
  }
  if (digits.length === 23 && accept('pP')) {
    accept('+-');
    acceptRun('0123456789_');
  }
  accept('i');
  return end;
}
