import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, rename, unlink } from 'node:fs/promises';
import { isAbsolute } from 'node:path';

/**
 * File writes that nobody else on the VM can redirect (docs/security.md, "The VM side").
 * A path is walked one directory at a time from `/`: each directory is opened with
 * `O_NOFOLLOW | O_DIRECTORY` relative to the one before (through `/proc/self/fd/<fd>/<name>`,
 * Node's stand-in for `openat`), so a symbolic link anywhere on the path is refused, and a
 * directory swapped after it was checked is never the one written into. Each directory must
 * belong to root or to the writer and be writable by nobody else, so nobody else can rename
 * or replace what is in it. The file itself is a new one (`O_CREAT | O_EXCL`, a random name)
 * renamed over the target inside the opened directory: a symlink planted at the target is
 * replaced, never followed.
 */

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY, O_CREAT, O_EXCL } = constants;

export class UnsafePathError extends Error {
  override readonly name = 'UnsafePathError';
}

export interface SafeWrite {
  content: string;
  mode: number;
  /**
   * The file's group, when a group must read it (the mesh identity: istio-proxy's group). The
   * owner is always the writer: the agent never hands a file to another user.
   */
  gid?: number;
  /**
   * The group that may also write the file's directory: only for a file that only that group
   * reads (Istio's `/etc/certs`, where istio-proxy writes its own certificates), which that
   * group can then only spoil for itself. Every other directory is writable by its owner alone.
   */
  sharedWithGid?: number;
}

const self = () => process.geteuid?.() ?? 0;
const at = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;

/** Why a directory on the path is not one only root or the writer can change, if it is not. */
function untrusted(
  info: { uid: number; gid: number; mode: number },
  last: boolean,
  sharedWithGid: number | undefined,
): string | undefined {
  if (info.uid !== 0 && info.uid !== self()) return `belongs to uid ${info.uid}`;
  const othersWrite = (info.mode & 0o002) !== 0;
  const groupWrites = (info.mode & 0o020) !== 0;
  // A root-owned sticky directory (/tmp) on the way: nobody can rename what others put in it,
  // and the next component is checked in turn. Never the directory written into.
  if (!last && info.uid === 0 && (info.mode & 0o1000) !== 0) return undefined;
  if (othersWrite) return `is writable by every user (mode ${(info.mode & 0o7777).toString(8)})`;
  if (groupWrites && !(last && sharedWithGid !== undefined && info.gid === sharedWithGid)) {
    return `is writable by group ${info.gid} (mode ${(info.mode & 0o7777).toString(8)})`;
  }
  return undefined;
}

/**
 * Opens `directory` (absolute), making missing components (owned by the writer, 0755). Throws
 * UnsafePathError naming the component that is a symlink, not a directory, or not trusted.
 */
export async function openTrustedDirectory(
  directory: string,
  options: { sharedWithGid?: number; create?: boolean } = {},
): Promise<FileHandle> {
  const { sharedWithGid, create = true } = options;
  if (!isAbsolute(directory)) throw new UnsafePathError(`'${directory}' is not an absolute path`);
  const names = directory.split('/').filter((name) => name !== '' && name !== '.');
  if (names.includes('..')) throw new UnsafePathError(`'${directory}' goes up with '..'`);
  let handle = await open('/', O_RDONLY | O_DIRECTORY);
  let walked = '';
  try {
    for (let index = 0; index <= names.length; index += 1) {
      const info = await handle.stat();
      const why = untrusted(info, index === names.length, sharedWithGid);
      if (why) {
        throw new UnsafePathError(
          `${walked || '/'} ${why}: only root or the agent's own user may own a directory the agent writes into`,
        );
      }
      const name = names[index];
      if (name === undefined) break;
      const next = await openChild(handle, name, `${walked}/${name}`, create);
      await handle.close();
      handle = next;
      walked = `${walked}/${name}`;
    }
    return handle;
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
}

async function openChild(
  parent: FileHandle,
  name: string,
  shown: string,
  create: boolean,
): Promise<FileHandle> {
  const flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
  try {
    return await open(at(parent, name), flags);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') {
      // O_DIRECTORY | O_NOFOLLOW on a link answers ENOTDIR: say which it is.
      const link = await lstat(at(parent, name)).then(
        (info) => info.isSymbolicLink(),
        () => false,
      );
      throw new UnsafePathError(
        `${shown} is ${link ? 'a symbolic link' : 'not a directory'}: the agent writes through real directories only (name the path without links, e.g. /run for /var/run)`,
      );
    }
    if (code !== 'ENOENT' || !create) {
      throw Object.assign(new Error(`cannot open ${shown}: ${code}`), { code });
    }
  }
  // mkdir never follows a link at its last component: a link planted meanwhile is EEXIST.
  await mkdir(at(parent, name), { mode: 0o755 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') {
      throw Object.assign(new Error(`cannot make ${shown}: ${error.code}`), { code: error.code });
    }
  });
  return openChild(parent, name, shown, false);
}

/**
 * The largest file the agent reads back to compare: far above any bootstrap file or hosts
 * file, far below what would hurt the agent if someone with write access to a directory it
 * writes into (istio-proxy in /etc/certs) planted a huge file at the name.
 */
const MAX_READ_BYTES = 1024 * 1024;

/**
 * The file's content, mode, owner and group as they are now; none for a non-regular file. The
 * content is read only when the size is `size` (when given) and at most MAX_READ_BYTES.
 */
async function current(dir: FileHandle, name: string, size?: number) {
  // O_NONBLOCK: a FIFO planted at the name must not hang the agent.
  const handle = await open(at(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch(
    () => undefined,
  );
  if (!handle) return undefined;
  try {
    const info = await handle.stat();
    if (!info.isFile()) return undefined;
    const readable = info.size <= MAX_READ_BYTES && (size === undefined || info.size === size);
    return { info, content: readable ? await handle.readFile('utf8') : undefined };
  } finally {
    await handle.close();
  }
}

/**
 * Writes `path` atomically (readers see the old file or the new), unless its content and mode
 * are already right, its owner is root or the writer, and its group is the one asked for: then
 * it is left untouched (its mtime stays, and nothing that watches it wakes up).
 */
export async function writeSafely(path: string, file: SafeWrite): Promise<'written' | 'unchanged'> {
  const slash = path.lastIndexOf('/');
  const name = path.slice(slash + 1);
  if (slash < 0 || name === '' || name === '.' || name === '..') {
    throw new UnsafePathError(`'${path}' does not name a file`);
  }
  const dir = await openTrustedDirectory(path.slice(0, slash) || '/', {
    ...(file.sharedWithGid === undefined ? {} : { sharedWithGid: file.sharedWithGid }),
  });
  try {
    const now = await current(dir, name, Buffer.byteLength(file.content));
    if (
      now &&
      now.content === file.content &&
      (now.info.mode & 0o7777) === file.mode &&
      (now.info.uid === 0 || now.info.uid === self()) &&
      (file.gid === undefined || now.info.gid === file.gid)
    ) {
      return 'unchanged';
    }
    const temporary = `.${name}.${randomBytes(6).toString('hex')}`;
    const handle = await open(
      at(dir, temporary),
      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
      0o600,
    ).catch((error: NodeJS.ErrnoException) => {
      // Named by the path asked for, not by /proc/self/fd/<n>; the code stays for callers.
      throw Object.assign(
        new Error(`cannot write ${path}: ${error.code ?? error.message} in its directory`),
        { code: error.code },
      );
    });
    try {
      await handle.writeFile(file.content, 'utf8');
      if (file.gid !== undefined) await handle.chown(-1, file.gid);
      // After the chown: a group change may clear set-id bits, and the umask narrowed `open`.
      await handle.chmod(file.mode);
      await handle.sync();
      await handle.close();
      await rename(at(dir, temporary), at(dir, name));
      return 'written';
    } catch (error) {
      await handle.close().catch(() => {});
      await unlink(at(dir, temporary)).catch(() => {});
      throw error;
    }
  } finally {
    await dir.close();
  }
}

/**
 * The text of a regular file, read without following a link anywhere on its path; none when
 * there is no such file (or its directory is not one the agent may trust).
 */
export async function readSafely(path: string): Promise<string | undefined> {
  const slash = path.lastIndexOf('/');
  const dir = await openTrustedDirectory(path.slice(0, slash) || '/', { create: false }).catch(
    () => undefined,
  );
  if (!dir) return undefined;
  try {
    const now = await current(dir, path.slice(slash + 1));
    // Rewriting a file it could not read would drop what it holds.
    if (now && now.content === undefined) {
      throw new Error(`${path} is over ${MAX_READ_BYTES} bytes; the agent does not rewrite it`);
    }
    return now?.content;
  } finally {
    await dir.close();
  }
}
