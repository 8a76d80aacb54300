import {
  atTerminator,
  type Fail,
  goRune,
  isAlphaNumeric,
  isSpace,
  quoted,
  scanNumber,
} from './lex-scan.ts';

// Defined in lex-scan.ts, the lower file, which reports its errors with it too.
export type { Fail } from './lex-scan.ts';

/**
 * The tokens of a Go text/template: text, and inside `{{ }}` the words of actions. Trim
 * markers (`{{- ` and ` -}}`, a space next to the dash, else `{{-3}}` is the number -3) cut
 * the white space of the text beside them; comments (`{{/* ... *\/}}`) leave no token.
 */

export type TokenKind =
  | 'text'
  | 'leftDelim'
  | 'rightDelim'
  | 'space'
  | 'field'
  | 'variable'
  | 'identifier'
  | 'keyword'
  | 'bool'
  | 'nil'
  | 'number'
  | 'char'
  | 'string'
  | 'rawString'
  | 'dot'
  | 'pipe'
  | 'leftParen'
  | 'rightParen'
  | 'declare'
  | 'assign'
  | 'comma'
  | 'eof';

export interface Token {
  kind: TokenKind;
  text: string;
  /** Where the token starts in the source (a string index). */
  pos: number;
}

const KEYWORDS = new Set([
  'if',
  'else',
  'end',
  'range',
  'with',
  'break',
  'continue',
  'define',
  'template',
  'block',
]);

export function lex(source: string, fail: Fail): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  for (;;) {
    const open = source.indexOf('{{', at);
    let end = open === -1 ? source.length : open;
    const trimLeft = open !== -1 && source[open + 2] === '-' && isSpace(source[open + 3]);
    if (trimLeft) while (end > at && isSpace(source[end - 1])) end--;
    if (end > at) tokens.push({ kind: 'text', text: source.slice(at, end), pos: at });
    if (open === -1) break;
    const inside = open + 2 + (trimLeft ? 2 : 0);
    const close = source.startsWith('/*', inside)
      ? skipComment(source, open, inside, fail)
      : lexAction(source, open, inside, tokens, fail);
    at = close.at;
    if (close.trim) while (isSpace(source[at])) at++;
  }
  tokens.push({ kind: 'eof', text: '', pos: source.length });
  return tokens;
}

/** ` -}}` (trim) or `}}` at `pos`: the length of the delimiter, 0 when neither. */
function rightDelim(source: string, pos: number): { length: number; trim: boolean } {
  if (isSpace(source[pos]) && source.startsWith('-}}', pos + 1)) return { length: 4, trim: true };
  return { length: source.startsWith('}}', pos) ? 2 : 0, trim: false };
}

function skipComment(source: string, open: number, inside: number, fail: Fail) {
  const end = source.indexOf('*/', inside + 2);
  if (end === -1) fail(open, 'unclosed comment');
  const delim = rightDelim(source, end + 2);
  if (delim.length === 0) fail(end, 'comment ends before closing delimiter');
  return { at: end + 2 + delim.length, trim: delim.trim };
}

function lexAction(source: string, open: number, inside: number, tokens: Token[], fail: Fail) {
  tokens.push({ kind: 'leftDelim', text: '{{', pos: open });
  let pos = inside;
  let parens = 0;
  const push = (kind: TokenKind, end: number) => {
    tokens.push({ kind, text: source.slice(pos, end), pos });
    pos = end;
  };
  const word = (from: number) => {
    let end = from;
    while (isAlphaNumeric(source[end])) end++;
    if (!atTerminator(source, end)) fail(end, `bad character ${goRune(source[end] ?? '')}`);
    return end;
  };
  for (;;) {
    const delim = rightDelim(source, pos);
    if (delim.length > 0) {
      if (parens > 0) fail(pos, 'unclosed left paren');
      tokens.push({ kind: 'rightDelim', text: '}}', pos });
      return { at: pos + delim.length, trim: delim.trim };
    }
    const c = source[pos];
    const next = source[pos + 1];
    if (c === undefined) fail(open, 'unclosed action');
    else if (isSpace(c)) {
      let end = pos;
      while (isSpace(source[end])) end++;
      // The last space before `-}}` belongs to the trim marker.
      if (source.startsWith('-}}', end)) end--;
      if (end > pos) push('space', end);
    } else if (c === '=') push('assign', pos + 1);
    else if (c === ':') {
      if (next !== '=') fail(pos, 'expected :=');
      push('declare', pos + 2);
    } else if (c === '|') push('pipe', pos + 1);
    else if (c === ',') push('comma', pos + 1);
    else if (c === '(') {
      parens++;
      push('leftParen', pos + 1);
    } else if (c === ')') {
      if (--parens < 0) fail(pos, 'unexpected right paren');
      push('rightParen', pos + 1);
    } else if (c === '"' || c === "'") {
      push(c === '"' ? 'string' : 'char', quoted(source, pos, fail));
    } else if (c === '`') {
      const end = source.indexOf('`', pos + 1);
      if (end === -1) fail(pos, 'unterminated raw quoted string');
      push('rawString', end + 1);
    } else if (c === '$') push('variable', word(pos + 1));
    else if (c === '.' && !(next !== undefined && next >= '0' && next <= '9')) {
      const end = word(pos + 1);
      push(end === pos + 1 ? 'dot' : 'field', end);
    } else if (c === '+' || c === '-' || c === '.' || (c >= '0' && c <= '9')) {
      const end = scanNumber(source, pos);
      if (isAlphaNumeric(source[end])) {
        fail(pos, `bad number syntax: "${source.slice(pos, end + 1)}"`);
      }
      push('number', end);
    } else if (isAlphaNumeric(c)) {
      const end = word(pos);
      const text = source.slice(pos, end);
      push(
        KEYWORDS.has(text)
          ? 'keyword'
          : text === 'true' || text === 'false'
            ? 'bool'
            : text === 'nil'
              ? 'nil'
              : 'identifier',
        end,
      );
    } else fail(pos, `unrecognized character in action: ${goRune(c)}`);
  }
}
