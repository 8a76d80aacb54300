import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAgentFiles } from '../../packaging/agent-files.ts';
import { projectVersion } from '../../packaging/agent-package.ts';
import { buildDeb } from '../../packaging/deb-package.ts';
import {
  packageInputs,
  STOCK_DEBIAN_SYSTEMS,
  stubStockDebian,
} from '../fixtures/agent-package-build.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, entryName, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { type ScratchRoot, scratchRoot } from '../fixtures/scratch-dpkg-root.ts';

/**
 * The agent's x86_64 .deb as an operator meets it: dpkg installs it into a root of its own (its
 * own package database, where what the package depends on is stubbed at Debian 12's versions;
 * the maintainer scripts run, with systemd played by a stand-in that starts the installed
 * unit's ExecStart), and the installed executable, with no Node.js in the root, registers the
 * VM with the local runtime (real gateway, handlers and dynalite). Then the package is upgraded
 * under the running agent, removed and purged.
 */
const REPO = join(import.meta.dirname, '..', '..');
const hasCommand = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
const UNIT = 'registrar-agent.service';
const ENTRY = entryName('web', '10.0.0.7');

// dpkg's scripts create the user with `useradd --root`, which only root may run. CI runs as
// root (.ci/run installs with apt-get) and always runs this; elsewhere it needs root and dpkg.
const canInstall = process.getuid?.() === 0 && hasCommand('dpkg-deb');

describe.runIf(canInstall || process.env.CI === 'true')(
  'the agent .deb installed by dpkg into a scratch root',
  () => {
    let work: string;
    let root: ScratchRoot;
    let bed: AgentTestbed;
    let oldDeb: string;
    let newDeb: string;
    const systemctl = (...args: string[]) =>
      execFileSync(join(root.dir, '.stand-in-bin/systemctl'), args, {
        env: { ...process.env, STAND_IN_ROOT: root.dir },
      });
    const agentPid = () => {
      const file = join(root.dir, 'run/registrar-agent.pid');
      return existsSync(file) ? Number(readFileSync(file, 'utf8')) : undefined;
    };
    const alive = (pid: number | undefined) => {
      if (pid === undefined) return false;
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const log = () => readFileSync(join(root.dir, 'run/systemctl.log'), 'utf8');

    beforeAll(async () => {
      work = mkdtempSync(join(tmpdir(), 'agent-deb-'));
      const inputs = await packageInputs(work);
      oldDeb = buildDeb(
        inputs.build('x86_64', { version: '0.2.0-dev', outDir: join(work, 'old') }),
      );
      newDeb = buildDeb(
        inputs.build('x86_64', { version: '0.2.0-dev.1', outDir: join(work, 'new') }),
      );
      root = scratchRoot(join(work, 'root'));
      bed = await startAgentTestbed();
      await bed.applyGroup('web');
    }, 120_000);

    afterAll(async () => {
      const pid = agentPid();
      if (alive(pid)) process.kill(pid as number, 'SIGKILL');
      await bed?.close();
      rmSync(work, { recursive: true, force: true });
    });

    it('is not configured on a C library older than its executable needs: dpkg names the dependency', async () => {
      // Debian 9's glibc: 2.24, older than the 2.28 the executable's symbols ask for.
      await stubStockDebian(root, 'Debian 12', { libc6: '2.24-11+deb9u4' });
      const installed = await root.dpkg(['-i', oldDeb]);
      expect(installed.code).not.toBe(0);
      expect(installed.output).toContain('registrar-agent depends on libc6 (>= 2.28)');
      expect(installed.output).toContain('Version of libc6 on system is 2.24-11+deb9u4');
      expect(installed.output).not.toContain('nodejs');
      expect(existsSync(join(root.dir, 'etc/systemd/system/multi-user.target.wants', UNIT))).toBe(
        false,
      );
    });

    it("with Debian 12's libraries and no Node.js it creates the user, installs the files with their modes, enables the service and does not start it", async () => {
      await root.stub('libc6', STOCK_DEBIAN_SYSTEMS['Debian 12'].libc6);
      const configured = await root.dpkg(['--configure', '-a']);
      expect(configured.code, configured.output).toBe(0);
      expect(configured.output).toContain('installed and enabled, not started');
      expect(readFileSync(join(root.dir, 'etc/passwd'), 'utf8')).toMatch(
        /^registrar-agent:x:\d+:\d+:workload-registrar agent:\/nonexistent:\/usr\/sbin\/nologin$/m,
      );
      for (const path of readAgentFiles(REPO)) {
        const stat = statSync(join(root.dir, path.target));
        expect((stat.mode & 0o7777).toString(8), path.target).toBe(path.mode.toString(8));
        expect(stat.uid, path.target).toBe(0);
      }
      expect(
        lstatSync(
          join(root.dir, 'etc/systemd/system/multi-user.target.wants', UNIT),
        ).isSymbolicLink(),
      ).toBe(true);
      expect(log()).toContain(`enable ${UNIT}`);
      expect(log()).not.toMatch(/^(start|restart|try-restart) /m);
      expect(agentPid()).toBeUndefined();
    });

    const installedAgent = (args: string[]) =>
      spawnSync(join(root.dir, 'opt/registrar-agent/registrar-agent'), args, {
        encoding: 'utf8',
        // No Node.js anywhere it could look: the executable carries its own.
        env: { PATH: '/nonexistent' },
      });

    it('installs an executable that needs no Node.js: it answers --version', () => {
      expect(existsSync(join(root.dir, 'usr/bin/node'))).toBe(false);
      const version = installedAgent(['--version']);
      expect(version.stderr).toBe('');
      expect(version.stdout).toBe(`registrar-agent ${projectVersion(REPO)}\n`);
    });

    it('started as shipped, the agent refuses its unconfigured file, naming url, group and namespace (exit 2, no restart)', () => {
      const shipped = join(root.dir, 'etc/registrar-agent/agent.yaml');
      const run = installedAgent(['--config', shipped]);
      // RestartPreventExitStatus=2 in the unit: systemd does not start it again.
      expect(run.status).toBe(2);
      expect(run.stderr).toContain('url: is required');
      expect(run.stderr).toContain('group: is required');
      expect(run.stderr).toContain('namespace: is required');
      expect(readFileSync(join(root.dir, 'usr/lib/systemd/system', UNIT), 'utf8')).toMatch(
        /^RestartPreventExitStatus=2$/m,
      );
    });

    it('with only url set in the shipped file, it refuses to start, naming group and namespace (exit 2)', () => {
      const edited = join(work, 'only-url.yaml');
      const shipped = readFileSync(join(root.dir, 'etc/registrar-agent/agent.yaml'), 'utf8');
      writeFileSync(edited, shipped.replace(/^# url: \S+.*$/m, `url: ${bed.runtime.url}`));
      const run = installedAgent(['--config', edited]);
      expect(run.status).toBe(2);
      expect(run.stderr).not.toContain('url:');
      expect(run.stderr).toMatch(
        /^registrar-agent: invalid agent configuration: group: is required.*; namespace: is required/,
      );
    });

    it('configured, the installed agent registers the VM with the local runtime', async () => {
      const tokenFile = join(root.dir, 'etc/registrar-agent/token');
      writeFileSync(tokenFile, bed.token, { mode: 0o600 });
      // The operator's edit of the conffile: the registrar, this VM, a short drain for the test.
      writeFileSync(
        join(root.dir, 'etc/registrar-agent/agent.yaml'),
        [
          `url: ${bed.runtime.url}`,
          'group: web',
          'namespace: shop',
          'ip: [10.0.0.7]',
          'imds: { enabled: false }',
          `auth: { mode: token, tokenFile: ${tokenFile} }`,
          'timing: { drainDelay: 1s }',
          '',
        ].join('\n'),
      );
      systemctl('start', UNIT);
      const entry = await waitFor(
        async () => {
          const found = await bed.entry(ENTRY);
          return found?.connected ? found : undefined;
        },
        'the installed agent to register',
        20_000,
      );
      expect(entry.we.metadata.annotations?.['istio.io/autoRegistrationGroup']).toBe('web');
    });

    it('an upgrade keeps the VM registered: the old agent drains, the new one registers again, the edited config stays', async () => {
      const before = await bed.entry(ENTRY);
      const oldPid = agentPid();
      const samples: { present: boolean; uid?: string; connected?: boolean; reason?: string }[] =
        [];
      let upgrading = true;
      const sampling = (async () => {
        while (upgrading) {
          const found = await bed.entry(ENTRY);
          const healthy = found?.we.status?.conditions?.find((c) => c.type === 'Healthy');
          samples.push({
            present: found !== undefined,
            uid: found?.we.metadata.uid,
            connected: found?.connected,
            reason: (healthy as { reason?: string } | undefined)?.reason,
          });
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      const upgraded = await root.dpkg(['-i', newDeb]);
      const after = await waitFor(
        async () => {
          const found = await bed.entry(ENTRY);
          return found?.connected ? found : undefined;
        },
        'the upgraded agent to register again',
        20_000,
      );
      upgrading = false;
      await sampling;
      expect(upgraded.code, upgraded.output).toBe(0);
      expect(log()).toContain(`try-restart ${UNIT}`);
      expect(agentPid()).not.toBe(oldPid);
      expect(alive(agentPid())).toBe(true);
      expect(alive(oldPid)).toBe(false);
      // Never deleted, never replaced: one entry, the same uid, in every sample.
      expect(samples.every((s) => s.present && s.uid === before?.we.metadata.uid)).toBe(true);
      // Drained before it let go: the mesh saw it Draining while it was still held.
      expect(samples.some((s) => s.connected && s.reason === 'Draining')).toBe(true);
      expect(after.we.metadata.uid).toBe(before?.we.metadata.uid);
      expect(readFileSync(join(root.dir, 'etc/registrar-agent/agent.yaml'), 'utf8')).toContain(
        bed.runtime.url,
      );
      expect(
        execFileSync('dpkg-query', [`--root=${root.dir}`, '-W', 'registrar-agent'], {
          encoding: 'utf8',
        }),
      ).toBe('registrar-agent\t0.2.0~dev.1\n');
    }, 60_000);

    it('removal stops the agent and leaves only configuration and the user; purge deletes the configuration', async () => {
      const pid = agentPid();
      const removed = await root.dpkg(['-r', 'registrar-agent']);
      expect(removed.code, removed.output).toBe(0);
      expect(alive(pid)).toBe(false);
      expect(
        await waitFor(
          async () => !(await bed.entry(ENTRY))?.connected,
          'the entry to be disconnected',
        ),
      ).toBe(true);
      for (const gone of [
        'opt/registrar-agent',
        `usr/lib/systemd/system/${UNIT}`,
        `etc/systemd/system/multi-user.target.wants/${UNIT}`,
      ]) {
        expect(existsSync(join(root.dir, gone)), gone).toBe(false);
      }
      expect(readFileSync(join(root.dir, 'etc/registrar-agent/agent.yaml'), 'utf8')).toContain(
        bed.runtime.url,
      );
      expect(existsSync(join(root.dir, 'etc/registrar-agent/token'))).toBe(true);
      expect(readFileSync(join(root.dir, 'etc/passwd'), 'utf8')).toMatch(/^registrar-agent:/m);
      const purged = await root.dpkg(['-P', 'registrar-agent']);
      expect(purged.code, purged.output).toBe(0);
      expect(existsSync(join(root.dir, 'etc/registrar-agent'))).toBe(false);
    });
  },
);
