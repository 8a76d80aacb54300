import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDeb } from '../../packaging/deb-package.ts';
import { packageInputs, stubStockDebian } from '../fixtures/agent-package-build.ts';
import {
  type ChrootTools,
  chrootToolsAvailable,
  prepareChrootTools,
} from '../fixtures/chroot-root.ts';
import { buildIstioDeb } from '../fixtures/istio-packages-stand-in.ts';
import { PROXY_UID, setIstioHook } from '../fixtures/istio-stand-in.ts';
import { startIstio } from '../fixtures/istio-unit-stand-in.ts';
import { type ScratchRoot, scratchRoot } from '../fixtures/scratch-dpkg-root.ts';
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
 * The agent's .deb and Istio's (a STAND-IN named istio-sidecar whose postinst chowns as
 * Istio's does: test/fixtures/istio-packages-stand-in.ts), installed by dpkg into a scratch
 * root as on a VM (test/fixtures/scratch-dpkg-root.ts: the scripts run without chroot, under
 * DPKG_ROOT). The sidecar is turned on as docs/agent.md says, and istio-proxy plants while it
 * owns /var/lib/istio, as Istio's package and guide leave it. Then the scriptlets repair with
 * no operator: the agent's upgrade (postinst configure), and Istio's upgrade (its postinst
 * gives envoy back to istio-proxy, which plants again at once through the postinst's hook;
 * then the file trigger on istio-start.sh runs the agent's postinst `triggered`). After each,
 * the check passes and istio's start (test/fixtures/istio-unit-stand-in.ts, inside the root)
 * never runs the planted line.
 */
const hasCommand = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
const CAN_RUN =
  process.getuid?.() === 0 &&
  hasCommand('dpkg-deb') &&
  hasCommand('setpriv') &&
  chrootToolsAvailable();
const WRITERS = [
  ['istio-proxy', PROXY_UID],
  ['another local user', STRANGER_UID],
] as const;

describe.runIf(CAN_RUN || process.env.CI === 'true')(
  'the agent .deb’s scriptlets take the sidecar back after Istio’s package configures',
  () => {
    let work: string;
    let tools: ChrootTools | undefined;
    const debs = { agent1: '', agent2: '', istio1: '', istio2: '' };

    beforeAll(async () => {
      // Not under the test run's TMPDIR, and readable: the attacker's users must reach the root.
      work = mkdtempSync('/tmp/sidecar-deb-');
      chmodSync(work, 0o755);
      const inputs = await packageInputs(work);
      debs.agent1 = buildDeb(
        inputs.build('x86_64', { version: '0.3.0-dev', outDir: join(work, 'agent1') }),
      );
      debs.agent2 = buildDeb(
        inputs.build('x86_64', { version: '0.3.0-dev.1', outDir: join(work, 'agent2') }),
      );
      debs.istio1 = buildIstioDeb(join(work, 'istio1'), '1.24.0');
      debs.istio2 = buildIstioDeb(join(work, 'istio2'), '1.24.1');
      tools = prepareChrootTools();
    }, 120_000);
    afterAll(() => {
      tools?.close();
      rmSync(work, { recursive: true, force: true });
    });

    /** A VM with Istio's package 1.24.0 and the agent's 0.3.0-dev, as its guide leaves them. */
    async function vm(name: string): Promise<ScratchRoot> {
      const root = scratchRoot(join(work, name));
      execFileSync('chmod', ['755', root.dir]);
      await stubStockDebian(root);
      preparePlants(root.dir);
      tools?.install(root.dir);
      const istio = await root.dpkg(['-i', debs.istio1]);
      expect(istio.code, istio.output).toBe(0);
      // Istio's VM guide: `chown -R istio-proxy /var/lib/istio ...`.
      execFileSync('chown', ['-R', `${PROXY_UID}:${PROXY_UID}`, join(root.dir, 'var/lib/istio')]);
      const agent = await root.dpkg(['-i', debs.agent1]);
      expect(agent.code, agent.output).toBe(0);
      return root;
    }

    it('leaves Istio’s layout alone while the sidecar is not turned on', async () => {
      const root = await vm('off');
      const upgrade = await root.dpkg(['-i', debs.istio2]);
      expect(upgrade.code, upgrade.output).toBe(0);
      expect(upgrade.output).toContain('Processing triggers for registrar-agent');
      expect(upgrade.output).not.toContain('istio-sidecar-repair');
      expect(readFileSync(join(root.dir, 'etc/passwd'), 'utf8')).toContain('istio-proxy:');
      expect(
        execFileSync('stat', ['-c', '%u', join(root.dir, 'var/lib/istio')], { encoding: 'utf8' }),
      ).toBe(`${PROXY_UID}\n`);
    });

    describe.each(PLANT_KINDS)('%s', (kind) => {
      it.each(WRITERS)(
        'written by %s: the agent’s upgrade repairs what was planted before, Istio’s upgrade triggers the repair of what is planted in its window, and no line runs as root',
        async (_, writer) => {
          const root = await vm(`${kind}-${writer}`);
          turnSidecarOn(root.dir);
          expect(Object.values(plant(root.dir, kind, writer))).not.toContain('refused');
          expect((await checkRoot(root.dir)).code).toBe(1);

          // The agent's upgrade: postinst configure takes the layout back.
          const agent = await root.dpkg(['-i', debs.agent2]);
          expect(agent.code, agent.output).toBe(0);
          expect(agent.output).toContain('istio-sidecar-repair: took back');
          expect(agent.output).toContain('istio-sidecar-check: safe');
          expect((await checkRoot(root.dir)).code).toBe(0);
          let istio = await startIstio(root.dir);
          expect(istio.started).toBe(true);
          expect(plantedLineRan(root.dir)).toBe(false);

          // Istio's upgrade gives envoy back; istio-proxy plants at once, in the window.
          rmSync(join(root.dir, 'plant.log'), { force: true });
          setIstioHook(
            root.dir,
            `stat -c %u "$DPKG_ROOT/var/lib/istio/envoy" > "$DPKG_ROOT/envoy-owner-in-window"\n${plantScript(kind, writer)}`,
          );
          const upgrade = await root.dpkg(['-i', debs.istio2]);
          expect(upgrade.code, upgrade.output).toBe(0);
          expect(readFileSync(join(root.dir, 'envoy-owner-in-window'), 'utf8')).toBe(
            `${PROXY_UID}\n`,
          );
          const steps = plantLog(root.dir);
          if (kind === 'swap') expect(steps['swap-dir']).toBe('refused');
          else expect(Object.values(steps)).not.toContain('refused');
          expect(upgrade.output).toContain('Processing triggers for registrar-agent');
          expect(upgrade.output).toContain(
            `istio-sidecar-repair: took back ${root.dir}/var/lib/istio/envoy: was directory, owner istio-proxy`,
          );
          if (kind !== 'swap') {
            expect(upgrade.output).toMatch(
              new RegExp(
                `istio-sidecar-repair: (removed|moved aside) ${root.dir}/var/lib/istio/envoy/sidecar.env `,
              ),
            );
          }
          expect(upgrade.output).toContain('istio-sidecar-check: safe');
          expect((await checkRoot(root.dir)).code).toBe(0);
          istio = await startIstio(root.dir);
          expect(istio.started).toBe(true);
          expect(plantedLineRan(root.dir)).toBe(false);
        },
      );
    });
  },
);
