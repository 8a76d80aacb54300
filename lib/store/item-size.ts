/**
 * The size DynamoDB counts for an item, estimated before writing it, so that an object over
 * the item limit is refused with the field that makes it large instead of DynamoDB's bare
 * "Item size has exceeded the maximum allowed size".
 *
 * AWS's rules ("DynamoDB item sizes and formats" in the developer guide): an item is the sum of
 * its attribute names (UTF-8 bytes) and values. A string is its UTF-8 bytes, a binary its raw
 * bytes, a boolean or null 1 byte, a number about 1 byte per two significant digits plus 1; a
 * map or list 3 bytes plus, per element, 1 byte and the element's size (a map element's name
 * included); a set the sum of its elements. The estimate errs high where AWS says "about"
 * (numbers count one byte more), so a write it accepts is never refused by DynamoDB.
 */

/** DynamoDB's maximum item size, 400 KB, in bytes (AWS's KB are 1,024 bytes). */
export const MAX_ITEM_BYTES = 400 * 1024;

const encoder = new TextEncoder();

export function utf8Bytes(text: string): number {
  return encoder.encode(text).length;
}

/** The size of one attribute value as the document client would marshal it. */
export function valueSize(value: unknown): number {
  if (typeof value === 'string') return utf8Bytes(value);
  if (typeof value === 'number' || typeof value === 'bigint') return numberSize(value);
  if (typeof value === 'boolean' || value === null) return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Set) {
    let bytes = 0;
    for (const member of value) bytes += valueSize(member);
    return bytes;
  }
  if (Array.isArray(value)) {
    return value.reduce<number>((bytes, element) => bytes + 1 + valueSize(element), 3);
  }
  if (typeof value === 'object') {
    let bytes = 3;
    for (const [name, member] of Object.entries(value)) {
      // `removeUndefinedValues`: an undefined member is not sent.
      if (member !== undefined) bytes += 1 + utf8Bytes(name) + valueSize(member);
    }
    return bytes;
  }
  return 0;
}

/** An item: its attribute names and values (top-level attributes have no element overhead). */
export function itemSize(item: Record<string, unknown>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) {
    if (value !== undefined) bytes += utf8Bytes(name) + valueSize(value);
  }
  return bytes;
}

/** Significant digits / 2, rounded up, + 1 (AWS), + 1 so that the estimate is an upper bound. */
function numberSize(value: number | bigint): number {
  const digits = String(value)
    .replace(/^-/, '')
    .replace(/e.*$/i, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(digits.length, 1) / 2) + 2;
}

/** A field of a document and the bytes it adds to the item (its name and overhead included). */
export interface FieldSize {
  path: (string | number)[];
  bytes: number;
}

/**
 * The fields that make a document large, largest first: the innermost fields that each hold
 * at least `share` of `total`. A label map of many small labels is named as the map
 * (`spec.template.labels`); one huge annotation is named as itself.
 */
export function largestFields(
  document: unknown,
  total: number,
  options: { share?: number; count?: number } = {},
): FieldSize[] {
  const floor = total * (options.share ?? 0.1);
  const found: FieldSize[] = [];
  const visit = (value: unknown, path: (string | number)[], bytes: number) => {
    const members = membersOf(value).filter((member) => member.bytes >= floor);
    if (members.length === 0) {
      found.push({ path, bytes });
      return;
    }
    for (const member of members) visit(member.value, [...path, member.key], member.bytes);
  };
  visit(document, [], valueSize(document));
  return found.sort((a, b) => b.bytes - a.bytes).slice(0, options.count ?? 3);
}

function membersOf(value: unknown): { key: string | number; value: unknown; bytes: number }[] {
  if (Array.isArray(value)) {
    return value.map((element, index) => ({
      key: index,
      value: element,
      bytes: 1 + valueSize(element),
    }));
  }
  if (typeof value !== 'object' || value === null || value instanceof Set) return [];
  if (value instanceof Uint8Array) return [];
  return Object.entries(value)
    .filter(([, member]) => member !== undefined)
    .map(([key, member]) => ({
      key,
      value: member,
      bytes: 1 + utf8Bytes(key) + valueSize(member),
    }));
}

/**
 * `390 KB`, `400.1 KB`, `812 bytes`: sizes as the limit is stated (1 KB = 1,024 bytes), rounded
 * up, so that a size over the limit never reads as the limit itself.
 */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const kilobytes = Math.ceil((bytes / 1024) * 10) / 10;
  return `${Number.isInteger(kilobytes) ? kilobytes : kilobytes.toFixed(1)} KB`;
}
