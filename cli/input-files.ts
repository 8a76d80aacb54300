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
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw unreadable(name, error as NodeJS.ErrnoException);
  }
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
  return Buffer.concat(chunks).toString('utf8');
}
