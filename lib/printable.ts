/**
 * Text from outside (an agent's health message, namespace, labels, close reason; a refusal's
 * reason quoting them) made safe for a line-oriented log: one event stays one line, and no
 * terminal escape sequence (`ESC [31m`, a C1 CSI) reaches the operator's terminal to recolour,
 * move the cursor or forge a line. Kept free of imports: the agent's bundle takes it too.
 */

const NAMED: Record<number, string> = { 9: '\\t', 10: '\\n', 13: '\\r' };

/**
 * C0 controls and DEL, C1 controls (0x80-0x9f: 0x9b is CSI on terminals that read them), and
 * the Unicode line and paragraph separators (U+2028, U+2029), which editors, `less` and
 * JavaScript treat as line ends.
 */
function isUnprintable(code: number): boolean {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029;
}

/** `\n`, `\r`, `\t` as written in JSON, any other as `\u001b`; everything else unchanged. */
export function printable(text: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (!isUnprintable(code)) continue;
    out += text.slice(from, i) + (NAMED[code] ?? `\\u${code.toString(16).padStart(4, '0')}`);
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

/**
 * A JSON text as it should reach a terminal: `JSON.stringify` escapes the C0 controls inside
 * strings already (raw ones are only formatting whitespace between tokens, as in a
 * pretty-printed line), but leaves DEL, C1 and U+2028/2029 raw; written as `\u2028` they
 * mean the same character, so the text parses to the same value.
 */
export function printableJson(text: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x7f || !isUnprintable(code)) continue;
    out += `${text.slice(from, i)}\\u${code.toString(16).padStart(4, '0')}`;
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}
