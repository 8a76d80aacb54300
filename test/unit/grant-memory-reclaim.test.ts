import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * packaging/grant-memory-reclaim.sh, the unit's ExecStartPre=+: it hands the agent's user its
 * own cgroup's reclaim file and nothing else. A directory stands in for /sys/fs/cgroup and a
 * file for /proc/self/cgroup (CGROUP_ROOT, PROC_CGROUP), so both cgroup versions run here; the
 * real cgroup v1 tree runs in test/integration/agent-footprint.test.ts. Changing a file's
 * owner to another user needs root, which this machine and CI have.
 */
const run = promisify(execFile);
const SCRIPT = new URL('../../packaging/grant-memory-reclaim.sh', import.meta.url).pathname;
const SERVICE = '/system.slice/registrar-agent.service';
const NOBODY = 65534;

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'grant-reclaim-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function file(path: string): string {
  const full = join(root, 'cgroup', path);
  mkdirSync(join(full, '..'), { recursive: true });
  writeFileSync(full, '');
  return full;
}

async function grant(procCgroup: string) {
  writeFileSync(join(root, 'proc-cgroup'), procCgroup);
  return run('sh', [SCRIPT, 'nobody'], {
    env: {
      PATH: process.env.PATH,
      CGROUP_ROOT: join(root, 'cgroup'),
      PROC_CGROUP: join(root, 'proc-cgroup'),
    },
  });
}

describe.skipIf(process.getuid?.() !== 0)('the unit grants the agent its reclaim file', () => {
  it("cgroup v2: the service cgroup's memory.reclaim, and not its other files", async () => {
    const reclaim = file(`${SERVICE}/memory.reclaim`);
    const high = file(`${SERVICE}/memory.high`);
    await grant(`0::${SERVICE}\n`);
    expect(statSync(reclaim).uid).toBe(NOBODY);
    expect(statSync(high).uid).toBe(0);
  });

  it('cgroup v1 (memory among other controllers): memory.force_empty', async () => {
    const forceEmpty = file(`memory${SERVICE}/memory.force_empty`);
    const limit = file(`memory${SERVICE}/memory.limit_in_bytes`);
    await grant(`9:name=systemd:${SERVICE}\n4:memory,foo:${SERVICE}\n0::/\n`);
    expect(statSync(forceEmpty).uid).toBe(NOBODY);
    expect(statSync(limit).uid).toBe(0);
  });

  it('never the root cgroup, which holds the whole machine', async () => {
    const reclaim = file('memory.reclaim');
    const { stderr } = await grant('0::/\n');
    expect(statSync(reclaim).uid).toBe(0);
    expect(stderr).toContain('the unit runs in the root cgroup; nothing granted');
  });

  it('exits 0 and says so where the kernel has no such file, so the agent still starts', async () => {
    const { stderr } = await grant(`0::${SERVICE}\n`);
    expect(stderr).toContain(`no ${join(root, 'cgroup')}${SERVICE}/memory.reclaim`);
  });
});

describe('the unit and the install steps agree on the grant', () => {
  const repo = new URL('../../', import.meta.url).pathname;
  const unit = readFileSync(join(repo, 'packaging/registrar-agent.service'), 'utf8');

  it("runs the script as root for the unit's own user, where the install steps put it", () => {
    const user = /^User=(\S+)$/m.exec(unit)?.[1];
    const grantLine = /^ExecStartPre=(\S+) (\S+) (\S+)$/m.exec(unit);
    // `+`: as root whatever User= says; `-`: the agent starts even if the grant fails.
    expect(grantLine?.[1]).toMatch(/^(?=.*\+)(?=.*-)[-+]{2}\/bin\/sh$/);
    expect(grantLine?.[3]).toBe(user);
    const installed = grantLine?.[2];
    expect(installed).toBe('/opt/registrar-agent/grant-memory-reclaim.sh');
    const docs = readFileSync(join(repo, 'docs/agent.md'), 'utf8');
    expect(docs).toContain(`grant-memory-reclaim.sh ${installed}`);
    expect(readFileSync(join(repo, 'packaging/build-agent.sh'), 'utf8')).toContain(
      'packaging/grant-memory-reclaim.sh',
    );
  });

  // systemd's own reading of the unit: an unknown key or a bad ExecStartPre prefix is reported
  // here (both tried). It checks that the programs the unit runs exist, so it reads the unit in
  // a root of its own where they do (stand-ins: the agent's executable is not installed here).
  it.skipIf(!existsSync('/usr/bin/systemd-analyze') || !existsSync('/usr/lib/systemd/system'))(
    'is a unit systemd accepts as written (systemd-analyze verify)',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'unit-verify-'));
      try {
        cpSync('/usr/lib/systemd/system', join(dir, 'usr/lib/systemd/system'), {
          recursive: true,
        });
        writeFileSync(join(dir, 'usr/lib/systemd/system/registrar-agent.service'), unit);
        const programs = [...unit.matchAll(/^ExecStart(?:Pre)?=[-+@!:]*(\/\S+)/gm)].map(
          (m) => m[1] ?? '',
        );
        expect(programs).toEqual(['/bin/sh', '/opt/registrar-agent/registrar-agent']);
        for (const program of programs) {
          mkdirSync(dirname(join(dir, program)), { recursive: true });
          writeFileSync(join(dir, program), '#!/bin/sh\n', { mode: 0o755 });
        }
        const { stdout, stderr } = await run('systemd-analyze', [
          'verify',
          `--root=${dir}`,
          '--man=no',
          'registrar-agent.service',
        ]);
        expect(`${stdout}${stderr}`).toBe('');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  // Issue 36: the reclaim used to cost ProtectControlGroups=yes. Now the tree is read-only but
  // for the one file the grant hands over (mutation: dropping the line, or reopening the
  // service's whole cgroup directory, fails here).
  it('mounts the cgroup tree read-only and reopens exactly the file the grant hands over', async () => {
    expect(unit).toMatch(/^ProtectControlGroups=yes$/m);
    expect(unit).toMatch(/^MemoryAccounting=yes$/m);
    const reopened = [...unit.matchAll(/^ReadWritePaths=(.*)$/gm)].flatMap((m) =>
      (m[1] ?? '')
        .split(/\s+/)
        .map((path) => path.replace(/^-/, '').replaceAll('%n', 'registrar-agent.service')),
    );
    expect(reopened).toEqual([
      `/sys/fs/cgroup${SERVICE}/memory.reclaim`,
      `/sys/fs/cgroup/memory${SERVICE}/memory.force_empty`,
    ]);
  });

  it.skipIf(process.getuid?.() !== 0)(
    'reopens the very files the grant script hands to the agent, on both cgroup versions',
    async () => {
      const reclaim = file(`${SERVICE}/memory.reclaim`);
      const forceEmpty = file(`memory${SERVICE}/memory.force_empty`);
      await grant(`0::${SERVICE}\n`);
      await grant(`4:memory:${SERVICE}\n`);
      const granted = [reclaim, forceEmpty].map((path) =>
        path.replace(join(root, 'cgroup'), '/sys/fs/cgroup'),
      );
      expect(statSync(reclaim).uid).toBe(NOBODY);
      expect(statSync(forceEmpty).uid).toBe(NOBODY);
      expect(unit).toContain(granted[0]?.replace('registrar-agent.service', '%n'));
      expect(unit).toContain(granted[1]?.replace('registrar-agent.service', '%n'));
    },
  );

  // systemd's own score of the unit's sandbox (0 is the tightest, 10 none): 8.3 before issue 36,
  // 5.6 with no capabilities and the cgroup tree read-only.
  it.skipIf(!existsSync('/usr/bin/systemd-analyze'))(
    'keeps systemd’s exposure score of the unit at 5.6 or below (systemd-analyze security)',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'unit-security-'));
      try {
        const copy = join(dir, 'registrar-agent.service');
        writeFileSync(copy, unit);
        const { stdout } = await run('systemd-analyze', ['security', '--offline=true', copy]);
        const score = Number(/Overall exposure level for \S+: ([\d.]+)/.exec(stdout)?.[1]);
        expect(score).toBeLessThanOrEqual(5.6);
        expect(stdout).toMatch(/✓ ProtectControlGroups=/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
