import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type CliIo, UsageError } from './commands/context.ts';

/** One input of `-f`: the name as the operator wrote it (for messages), and its text. */
export interface InputFile {
  name: string;
  text: string;
}

const EXTENSIONS = ['.yaml', '.yml', '.json'];

/**
 * Reads the inputs of `-f` as kubectl does: a file, `-` for stdin, or a directory (its .yaml,
 * .yml and .json files, in name order, not recursive). A path that is not there is a usage
 * error naming it, never a raw ENOENT.
 */
export async function readInputs(io: CliIo, names: readonly string[]): Promise<InputFile[]> {
  const inputs: InputFile[] = [];
  for (const name of names) {
    if (name === '-') {
      inputs.push({ name: '<stdin>', text: await readStdin(io) });
      continue;
    }
    const path = resolve(io.cwd, name);
    const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
      throw unreadable(name, error);
    });
    if (!info.isDirectory()) {
      inputs.push({ name, text: await readText(name, path) });
      continue;
    }
    const files = (await readdir(path))
      .filter((file) => EXTENSIONS.some((extension) => file.endsWith(extension)))
      .sort();
    if (files.length === 0) {
      throw new UsageError(`the directory "${name}" holds no .yaml, .yml or .json file`);
    }
    for (const file of files) {
      inputs.push({
        name: join(name, file),
        text: await readText(join(name, file), join(path, file)),
      });
    }
  }
  return inputs;
}

async function readText(name: string, path: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw unreadable(name, error as NodeJS.ErrnoException);
  }
  return decodeUtf8(name, bytes);
}

/**
 * The text of an input, which must be UTF-8 (as YAML and JSON are): a Latin-1 `café` read as
 * UTF-8 would be stored as `caf\uFFFD` and exported so. Refused with the file and the offset of
 * the first byte that is not UTF-8. A UTF-8 byte-order mark is dropped.
 */
export function decodeUtf8(name: string, bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const offset = firstInvalidUtf8(bytes);
    const byte = bytes[offset] ?? 0;
    throw new UsageError(
      `"${name}" is not UTF-8: byte ${offset} (0x${byte.toString(16).padStart(2, '0')}) starts no valid UTF-8 sequence; save the file as UTF-8`,
    );
  }
}

/**
 * The offset of the first byte that does not begin a well-formed UTF-8 sequence (the Unicode
 * standard's table: no overlong forms, no surrogates, nothing above U+10FFFF).
 */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i] ?? 0;
    if (lead < 0x80) {
      i += 1;
      continue;
    }
    // [length, lowest and highest allowed second byte]
    const shape: [number, number, number] | undefined =
      lead >= 0xc2 && lead <= 0xdf
        ? [2, 0x80, 0xbf]
        : lead === 0xe0
          ? [3, 0xa0, 0xbf]
          : lead === 0xed
            ? [3, 0x80, 0x9f]
            : lead >= 0xe1 && lead <= 0xef
              ? [3, 0x80, 0xbf]
              : lead === 0xf0
                ? [4, 0x90, 0xbf]
                : lead >= 0xf1 && lead <= 0xf3
                  ? [4, 0x80, 0xbf]
                  : lead === 0xf4
                    ? [4, 0x80, 0x8f]
                    : undefined;
    if (!shape) return i;
    const [length, low, high] = shape;
    const second = bytes[i + 1];
    if (second === undefined || second < low || second > high) return i;
    for (let k = 2; k < length; k++) {
      const next = bytes[i + k];
      if (next === undefined || (next & 0xc0) !== 0x80) return i;
    }
    i += length;
  }
  return bytes.length;
}

function unreadable(name: string, error: NodeJS.ErrnoException): Error {
  if (error.code === 'ENOENT' || error.code === 'ENOTDIR') {
    return new UsageError(`the path "${name}" does not exist`);
  }
  if (error.code === 'EACCES' || error.code === 'EPERM') {
    return new Error(`cannot read "${name}": permission denied`);
  }
  return new Error(`cannot read "${name}": ${error.message}`);
}

async function readStdin(io: CliIo): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin) chunks.push(Buffer.from(chunk));
  return decodeUtf8('<stdin>', Buffer.concat(chunks));
}
