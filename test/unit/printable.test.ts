import { describe, expect, it } from 'vitest';
import { memoryLogger } from '../../agent/logger.ts';
import { printable, printableJson } from '../../lib/printable.ts';

describe('printable', () => {
  it('leaves ordinary text, non-ASCII letters included, as it is', () => {
    expect(printable('shop/web-10.0.0.12 healthy -> false: HTTP 503 (café, 東京)')).toBe(
      'shop/web-10.0.0.12 healthy -> false: HTTP 503 (café, 東京)',
    );
  });

  it('escapes line ends, C0 and C1 controls, DEL and the Unicode line separators', () => {
    expect(printable('a\nb\rc\td\u0000e\u001b[31mf\u007fg\u009b2Jh\u2028i\u2029j')).toBe(
      'a\\nb\\rc\\td\\u0000e\\u001b[31mf\\u007fg\\u009b2Jh\\u2028i\\u2029j',
    );
  });

  it('keeps a JSON line one line of the same value', () => {
    const value = { msg: 'x\u2028y\u009bz\u001b[0m\n' };
    const line = printableJson(JSON.stringify(value));
    expect(printable(line)).toBe(line);
    expect(JSON.parse(line)).toEqual(value);
  });

  it('keeps the formatting whitespace of pretty-printed JSON', () => {
    expect(printableJson('{\n  "a": "\u2028"\n}')).toBe('{\n  "a": "\\u2028"\n}');
  });
});

describe("the agent's log", () => {
  it.each(['text', 'json'] as const)(
    'writes a reason with a newline and an escape as one %s line',
    (format) => {
      const logger = memoryLogger(format);
      logger.warn('refused (400): invalid label\nINFO  registered as x\u001b[31m', {
        reason: 'a\u2028b',
      });
      expect(logger.lines).toHaveLength(1);
      const [line = ''] = logger.lines;
      expect(printable(line)).toBe(line);
    },
  );
});
