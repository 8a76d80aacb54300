import { describe, expect, it } from 'vitest';
import { decodeUtf8 } from '../../cli/input-files.ts';

describe('input files must be UTF-8', () => {
  it('decodes UTF-8, multi-byte characters and a byte-order mark included', () => {
    expect(decodeUtf8('a.yaml', Buffer.from('name: café ✓ 🚀\n'))).toBe('name: café ✓ 🚀\n');
    expect(decodeUtf8('a.yaml', Buffer.from('\uFEFFkind: x', 'utf8'))).toBe('kind: x');
  });

  it.each([
    ['a Latin-1 é', [0x63, 0x61, 0x66, 0xe9], 3],
    ['a lone continuation byte', [0x61, 0x80], 1],
    ['an overlong "/"', [0x61, 0xc0, 0xaf], 1],
    ['a UTF-16 surrogate', [0x61, 0x62, 0xed, 0xa0, 0x80], 2],
    ['a sequence cut short at the end', [0x61, 0xe2, 0x9c], 1],
    ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80], 0],
    ['a valid é then an invalid byte', [0xc3, 0xa9, 0xff], 2],
  ])('refuses %s, naming the file and the first bad byte', (_what, bytes, offset) => {
    const hex = (bytes[offset] ?? 0).toString(16).padStart(2, '0');
    expect(() => decodeUtf8('x.yaml', Uint8Array.from(bytes))).toThrow(
      `"x.yaml" is not UTF-8: byte ${offset} (0x${hex}) starts no valid UTF-8 sequence`,
    );
  });
});
