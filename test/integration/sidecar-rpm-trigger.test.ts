import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRpm } from '../../packaging/rpm-package.ts';
import { packageInputs } from '../fixtures/agent-package-build.ts';
import {
  type ChrootTools,
  chrootToolsAvailable,
  prepareChrootTools,
  runWithRootMounts,
} from '../fixtures/chroot-root.ts';
import { buildIstioRpm } from '../fixtures/istio-packages-stand-in.ts';
import { PROXY_UID, setIstioHook } from '../fixtures/istio-stand-in.ts';
import { startIstio } from '../fixtures/istio-unit-stand-in.ts';
import type { CommandResult } from '../fixtures/run-program.ts';
import { STRANGER_UID } from '../fixtures/sidecar-layout.ts';
import {
  PLANT_KINDS,
  plant,
  plantedLineRan,
  plantLog,
  plantScript,
  preparePlants,
} from '../fixtures/sidecar-plants.ts';
import { checkRoot, turnSidecarOn } from '../fixtures/sidecar-root-steps.ts';

/**
 * The same story as test/integration/sidecar-deb-trigger.test.ts for the agent's .rpm: rpm
 * installs it and Istio's (a STAND-IN named istio-sidecar whose %post chowns as Istio's does)
 * into a scratch root with their scriptlets, which rpm runs chrooted in the root
 * (test/fixtures/chroot-root.ts gives it this machine's sh, coreutils, setpriv and
 * systemd-tmpfiles, and /proc). The agent's `%triggerin -- istio-sidecar` runs when the agent
 * is upgraded beside Istio and after every install or upgrade of Istio (after its %post).
 */
const hasCommand = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
const CAN_RUN =
  process.getuid?.() === 0 &&
  ['rpm', 'rpmbuild', 'setpriv'].every(hasCommand) &&
  chrootToolsAvailable();
const WRITERS = [
  ['istio-proxy', PROXY_UID],
  ['another local user', STRANGER_UID],
] as const;
const AGENT_UID = 990;

describe.runIf(CAN_RUN || process.env.CI === 'true')(
  'the agent .rpm’s scriptlets take the sidecar back after Istio’s package configures',
  () => {
    let work: string;
    let tools: ChrootTools | undefined;
    const rpms = { agent1: '', agent2: '', istio1: '', istio2: '' };

    beforeAll(async () => {
      // Not under the test run's TMPDIR, and readable: the attacker's users must reach the root.
      work = mkdtempSync('/tmp/sidecar-rpm-');
      chmodSync(work, 0o755);
      const inputs = await packageInputs(work);
      rpms.agent1 = buildRpm(
        inputs.build('x86_64', { version: '0.3.0-dev', outDir: join(work, 'agent1') }),
      );
      rpms.agent2 = buildRpm(
        inputs.build('x86_64', { version: '0.3.0-dev.1', outDir: join(work, 'agent2') }),
      );
      rpms.istio1 = buildIstioRpm(join(work, 'istio1'), '1.24.0');
      rpms.istio2 = buildIstioRpm(join(work, 'istio2'), '1.24.1');
      tools = prepareChrootTools();
    }, 120_000);
    afterAll(() => {
      tools?.close();
      rmSync(work, { recursive: true, force: true });
    });

    /** `rpm --root <root> ...`, scriptlets chrooted there; output of rpm and its scriptlets. */
    async function rpm(
      root: string,
      ...args: string[]
    ): Promise<CommandResult & { output: string }> {
      const result = await runWithRootMounts(root, ['rpm', '--root', root, ...args]);
      return { ...result, output: `${result.stdout}${result.stderr}` };
    }

    /** A VM with Istio's package 1.24.0 and the agent's 0.3.0-dev, as Istio's guide leaves them. */
    async function vm(name: string): Promise<string> {
      const root = join(work, name);
      mkdirSync(join(root, 'etc'), { recursive: true });
      chmodSync(root, 0o755);
      // The agent's user as its %pre or sysusers makes it (no useradd in the root).
      writeFileSync(
        join(root, 'etc/passwd'),
        `root:x:0:0:root:/root:/bin/sh\nregistrar-agent:x:${AGENT_UID}:${AGENT_UID}::/:/sbin/nologin\n`,
      );
      writeFileSync(join(root, 'etc/group'), `root:x:0:\nregistrar-agent:x:${AGENT_UID}:\n`);
      preparePlants(root);
      tools?.install(root);
      expect((await rpm(root, '--initdb')).code).toBe(0);
      const istio = await rpm(root, '-i', '--nodeps', rpms.istio1);
      expect(istio.code, istio.output).toBe(0);
      expect(readFileSync(join(root, 'etc/passwd'), 'utf8')).toContain('istio-proxy:');
      // Istio's VM guide: `chown -R istio-proxy /var/lib/istio ...`.
      execFileSync('chown', ['-R', `${PROXY_UID}:${PROXY_UID}`, join(root, 'var/lib/istio')]);
      const agent = await rpm(root, '-i', '--nodeps', rpms.agent1);
      expect(agent.code, agent.output).toBe(0);
      return root;
    }

    it('leaves Istio’s layout alone while the sidecar is not turned on', async () => {
      const root = await vm('off');
      const upgrade = await rpm(root, '-U', '--nodeps', rpms.istio2);
      expect(upgrade.code, upgrade.output).toBe(0);
      expect(upgrade.output).not.toContain('istio-sidecar-repair');
      expect(
        execFileSync('stat', ['-c', '%u', join(root, 'var/lib/istio')], { encoding: 'utf8' }),
      ).toBe(`${PROXY_UID}\n`);
    });

    describe.each(PLANT_KINDS)('%s', (kind) => {
      it.each(WRITERS)(
        'written by %s: the agent’s upgrade repairs what was planted before, Istio’s upgrade triggers the repair of what is planted in its window, and no line runs as root',
        async (_, writer) => {
          const root = await vm(`${kind}-${writer}`);
          turnSidecarOn(root);
          expect(Object.values(plant(root, kind, writer))).not.toContain('refused');
          expect((await checkRoot(root)).code).toBe(1);

          // The agent's upgrade beside Istio: %triggerin takes the layout back.
          const agent = await rpm(root, '-U', '--nodeps', rpms.agent2);
          expect(agent.code, agent.output).toBe(0);
          expect(agent.output).toContain('istio-sidecar-repair: took back /var/lib/istio:');
          expect(agent.output).toContain('istio-sidecar-check: safe');
          expect((await checkRoot(root)).code).toBe(0);
          let istio = await startIstio(root);
          expect(istio.started).toBe(true);
          expect(plantedLineRan(root)).toBe(false);

          // Istio's upgrade gives envoy back; istio-proxy plants at once, in the window.
          rmSync(join(root, 'plant.log'), { force: true });
          setIstioHook(
            root,
            `stat -c %u /var/lib/istio/envoy > /envoy-owner-in-window\n${plantScript(kind, writer)}`,
          );
          const upgrade = await rpm(root, '-U', '--nodeps', rpms.istio2);
          expect(upgrade.code, upgrade.output).toBe(0);
          expect(readFileSync(join(root, 'envoy-owner-in-window'), 'utf8')).toBe(`${PROXY_UID}\n`);
          const steps = plantLog(root);
          if (kind === 'swap') expect(steps['swap-dir']).toBe('refused');
          else expect(Object.values(steps)).not.toContain('refused');
          expect(upgrade.output).toContain(
            'istio-sidecar-repair: took back /var/lib/istio/envoy: was directory, owner istio-proxy',
          );
          if (kind !== 'swap') {
            expect(upgrade.output).toMatch(
              /istio-sidecar-repair: (removed|moved aside) \/var\/lib\/istio\/envoy\/sidecar\.env /,
            );
          }
          expect(upgrade.output).toContain('istio-sidecar-check: safe');
          expect((await checkRoot(root)).code).toBe(0);
          istio = await startIstio(root);
          expect(istio.started).toBe(true);
          expect(plantedLineRan(root)).toBe(false);
        },
        // Two rpm transactions in a chroot: past the default 30 s with the other core busy.
        90_000,
      );
    });
  },
);
