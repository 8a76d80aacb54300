import { execFileSync } from 'node:child_process';
import {
  chmod,
  chown,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readSafely, UnsafePathError, writeSafely } from '../../agent/safe-files.ts';
import { writeToken } from '../../agent/sidecar-files.ts';

/**
 * The attacker is a user who can change something on the path the agent writes to (istio-proxy
 * after a compromise of Envoy, another local user): it plants symbolic links and hands
 * directories to itself, hoping the agent writes through them. Every write below must refuse
 * or replace the link, never write where it points.
 */
let root: string;
let elsewhere: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'safe-files-'));
  // Where a planted link points: a directory that stands for /etc/cron.hourly.
  elsewhere = join(root, 'cron.hourly');
  await mkdir(elsewhere);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const isRoot = process.getuid?.() === 0;

describe('writes through planted symbolic links', () => {
  it('refuses a directory on the path that is a symlink, and writes nothing where it points', async () => {
    await mkdir(join(root, 'run', 'secrets'), { recursive: true });
    await symlink(elsewhere, join(root, 'run', 'secrets', 'tokens'));
    const target = join(root, 'run', 'secrets', 'tokens', 'istio-token');
    const write = writeToken(target, 'aaa.bbb.ccc', { uid: 0, gid: process.getgid?.() ?? 0 });
    await expect(write).rejects.toThrow(UnsafePathError);
    await expect(write).rejects.toThrow(
      `${join(root, 'run', 'secrets', 'tokens')} is a symbolic link`,
    );
    expect(await readdir(elsewhere)).toEqual([]);
  });

  it('replaces a symlink planted at the file name instead of writing through it', async () => {
    const victim = join(elsewhere, 'job');
    await writeFile(victim, 'original\n');
    await mkdir(join(root, 'certs'));
    const target = join(root, 'certs', 'root-cert.pem');
    await symlink(victim, target);
    expect(await writeSafely(target, { content: 'new\n', mode: 0o644 })).toBe('written');
    expect(await readFile(victim, 'utf8')).toBe('original\n');
    expect((await lstat(target)).isSymbolicLink()).toBe(false);
    expect(await readFile(target, 'utf8')).toBe('new\n');
  });

  it('does not count a symlink to a file with the right content as the file', async () => {
    const victim = join(elsewhere, 'same');
    await writeFile(victim, 'x\n', { mode: 0o644 });
    const target = join(root, 'mesh');
    await symlink(victim, target);
    expect(await writeSafely(target, { content: 'x\n', mode: 0o644 })).toBe('written');
    await expect(readlink(target)).rejects.toThrow();
  });

  it('reads nothing through a symlinked directory', async () => {
    await writeFile(join(elsewhere, 'hosts'), 'secret\n');
    await symlink(elsewhere, join(root, 'etc'));
    expect(await readSafely(join(root, 'etc', 'hosts'))).toBeUndefined();
  });

  it('refuses to read back (and so to rewrite) a huge file planted where a hosts file is read', async () => {
    const hosts = join(root, 'hosts');
    await writeFile(hosts, '#'.repeat(2 * 1024 * 1024));
    await expect(readSafely(hosts)).rejects.toThrow(`${hosts} is over 1048576 bytes`);
    await writeFile(hosts, '127.0.0.1 localhost\n');
    expect(await readSafely(hosts)).toBe('127.0.0.1 localhost\n');
  });

  it('is not held up by a FIFO planted at the file name', async () => {
    const target = join(root, 'cluster.env');
    execFileSync('mkfifo', [target]);
    expect(await writeSafely(target, { content: 'A=1\n', mode: 0o644 })).toBe('written');
    expect(await readFile(target, 'utf8')).toBe('A=1\n');
  });
});

describe('directories only root or the writer can change', () => {
  it('refuses to write into a directory every user may write', async () => {
    const shared = join(root, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o777);
    await expect(
      writeSafely(join(shared, 'cluster.env'), { content: '', mode: 0o644 }),
    ).rejects.toThrow(`${shared} is writable by every user (mode 777)`);
    expect(await readdir(shared)).toEqual([]);
  });

  it('refuses a group-writable directory unless the file is only that group’s to read', async () => {
    const certs = join(root, 'certs');
    await mkdir(certs);
    await chown(certs, process.getuid?.() ?? 0, 4242).catch(() => {});
    await chmod(certs, 0o775);
    const gid = (await stat(certs)).gid;
    await expect(
      writeSafely(join(certs, 'cluster.env'), { content: '', mode: 0o644 }),
    ).rejects.toThrow(`is writable by group ${gid}`);
    expect(
      await writeSafely(join(certs, 'root-cert.pem'), {
        content: 'pem',
        mode: 0o644,
        sharedWithGid: gid,
      }),
    ).toBe('written');
  });

  it.skipIf(!isRoot)(
    'refuses a directory on the path that another user owns (skipped unless root: it needs chown)',
    async () => {
      const tokens = join(root, 'run', 'secrets', 'tokens');
      await mkdir(tokens, { recursive: true });
      await chown(join(root, 'run', 'secrets'), 65534, 65534);
      await expect(
        writeSafely(join(tokens, 'istio-token'), { content: 't', mode: 0o640 }),
      ).rejects.toThrow(`${join(root, 'run', 'secrets')} belongs to uid 65534`);
      expect(await readdir(tokens)).toEqual([]);
    },
  );

  it('makes missing directories its own, never another user’s', async () => {
    const target = join(root, 'var', 'lib', 'istio', 'envoy', 'cluster.env');
    await writeSafely(target, { content: 'A=1\n', mode: 0o644 });
    for (const dir of ['var', 'var/lib', 'var/lib/istio', 'var/lib/istio/envoy']) {
      const info = await stat(join(root, dir));
      expect(info.uid, dir).toBe(process.geteuid?.() ?? 0);
      expect(info.mode & 0o777, dir).toBe(0o755);
    }
  });

  it('gives the mesh identity the proxy’s group to read and nobody else', async () => {
    const target = join(root, 'run', 'secrets', 'tokens', 'istio-token');
    const gid = isRoot ? 65534 : (process.getgid?.() ?? 0);
    await writeToken(target, 'aaa.bbb.ccc', { uid: 65534, gid });
    const info = await stat(target);
    expect(info.mode & 0o777).toBe(0o640);
    expect([info.uid, info.gid]).toEqual([process.geteuid?.() ?? 0, gid]);
  });

  it.skipIf(!isRoot)(
    'names the path it could not write, not the descriptor it wrote through (skipped unless root)',
    async () => {
      // Outside the run's TMPDIR (0700): nobody must reach it, and node where nobody may run it.
      const vm = await mkdtemp('/tmp/registrar-safe-files-');
      try {
        await chmod(vm, 0o755);
        await mkdir(join(vm, 'etc'), { mode: 0o755 });
        const node = join(vm, 'node');
        await copyFile(process.execPath, node);
        await chmod(node, 0o755);
        const module = new URL('../../agent/safe-files.ts', import.meta.url).pathname;
        const script = `import('${module}').then((m) => m.writeSafely('${vm}/etc/hosts', { content: 'x', mode: 0o644 })).catch((e) => console.log(e.code, e.message))`;
        const out = execFileSync(
          'setpriv',
          ['--reuid', '65534', '--regid', '65534', '--clear-groups', node, '-e', script],
          { encoding: 'utf8' },
        );
        expect(out.trim()).toBe(`EACCES cannot write ${vm}/etc/hosts: EACCES in its directory`);
      } finally {
        await rm(vm, { recursive: true, force: true });
      }
    },
  );

  it('refuses a relative path and one that goes up', async () => {
    await expect(writeSafely('etc/hosts', { content: '', mode: 0o644 })).rejects.toThrow(
      UnsafePathError,
    );
    await expect(writeSafely(`${root}/a/../../x`, { content: '', mode: 0o644 })).rejects.toThrow(
      "goes up with '..'",
    );
  });
});
