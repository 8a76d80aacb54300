import { readFile } from 'node:fs/promises';

/** A user of the VM, as a file's owner or a process's identity. */
export interface Owner {
  uid: number;
  gid: number;
}

/**
 * `name` (looked up in the system's /etc/passwd, for its uid and primary group), `1337` or
 * `1337:1337`; none when no such name is there.
 */
export async function lookupUser(user: string, passwd = '/etc/passwd'): Promise<Owner | undefined> {
  const numeric = /^(\d+)(?::(\d+))?$/.exec(user);
  if (numeric) {
    const uid = Number(numeric[1]);
    return { uid, gid: numeric[2] === undefined ? uid : Number(numeric[2]) };
  }
  const text = await readFile(passwd, 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    const [name, , uid, gid] = line.split(':');
    if (name === user && uid !== undefined && gid !== undefined) {
      return { uid: Number(uid), gid: Number(gid) };
    }
  }
  return undefined;
}
