import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChrootTools,
  chrootToolsAvailable,
  prepareChrootTools,
} from '../fixtures/chroot-root.ts';
import { ISTIO_POSTINST_TEXT } from '../fixtures/istio-stand-in.ts';
import { startIstio } from '../fixtures/istio-unit-stand-in.ts';
import {
  PROXY_UID,
  prepareSidecarLayout,
  type SidecarLayout,
  STRANGER_UID,
  sidecarLayoutAvailable,
} from '../fixtures/sidecar-layout.ts';
import {
  PLANT_KINDS,
  type PlantKind,
  plant,
  plantedLineRan,
  preparePlants,
} from '../fixtures/sidecar-plants.ts';
import { checkRoot, repairRoot, SIDECAR_LINKS } from '../fixtures/sidecar-root-steps.ts';

/**
 * Issue 43, played on a VM's root (test/fixtures/sidecar-layout.ts: Istio's package files and
 * its VM guide's `chown -R`, the real systemd-sysusers, the sidecar's root steps installed and
 * turned on as docs/agent.md says): istio-proxy makes each of the three plants
 * (test/fixtures/sidecar-plants.ts) wherever it owns the directory, and istio-proxy or another
 * local user writes a line that marks it ran. Before the first take-back (Istio's layout as its
 * package and guide leave it), and after Istio's package configured again (its postinst
 * stand-in's `chown istio-proxy` of envoy, config and the mesh file, on a layout taken back
 * before). Each time the check alone refuses and names the path; then istio's unit runs as
 * systemd would run it (test/fixtures/istio-unit-stand-in.ts: its ExecStartPre= lines, the
 * guard's repair and check, then Istio's start script stand-in, which sources the two files as
 * root inside the VM's root, then ExecStopPost=): the repair moves the plant aside (the real
 * systemd-tmpfiles takes the directories back), istio starts, and the planted line never ran.
 */
// CI runs as root with these tools (.ci/run) and always runs this: the plants are refused there,
// never skipped. Elsewhere it needs root.
const CAN_RUN = sidecarLayoutAvailable() && chrootToolsAvailable();
const REPAIR = '/opt/registrar-agent/istio-sidecar-repair.sh';
const WRITERS = [
  ['istio-proxy', PROXY_UID],
  ['another local user', STRANGER_UID],
] as const;

describe.runIf(CAN_RUN || process.env.CI === 'true')(
  'the three plants of issue 43 against root’s start of istio (needs root with setpriv, systemd, chroot and unshare; always run in CI)',
  () => {
    let tools: ChrootTools | undefined;
    const layouts: SidecarLayout[] = [];
    beforeAll(() => {
      tools = prepareChrootTools();
    }, 60_000);
    afterAll(() => {
      for (const layout of layouts) layout.close();
      tools?.close();
    });

    /** A VM: Istio's layout, the sidecar turned on; taken back once unless `takeBack: false`. */
    function vm(takeBack: boolean): string {
      const layout = prepareSidecarLayout({ takeBack });
      layouts.push(layout);
      preparePlants(layout.root);
      tools?.install(layout.root);
      return layout.root;
    }

    /** Istio's package configured again: its postinst, run as dpkg runs it without chroot. */
    function upgradeIstio(root: string): void {
      const postinst = join(root, '.istio-postinst');
      writeFileSync(postinst, ISTIO_POSTINST_TEXT);
      execFileSync('sh', [postinst, 'configure', '1.0'], {
        env: { ...process.env, DPKG_ROOT: root },
      });
      rmSync(postinst);
    }

    /** What the check says about the path the plant is at, with the command that repairs it. */
    function refusal(root: string, path: string, what: string): RegExp {
      const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      return new RegExp(
        `^istio-sidecar-check: ${literal(join(root, path))}: ${what}[^\\n]*; repair: ${literal(REPAIR)} --root=${literal(root)}$`,
        'm',
      );
    }

    /** After istio's start: what root reads is what the take-back makes it. */
    function expectTakenBack(root: string): void {
      const envoy = join(root, 'var/lib/istio/envoy');
      expect(lstatSync(envoy).isDirectory()).toBe(true);
      expect(statSync(envoy).uid).not.toBe(PROXY_UID);
      expect(statSync(join(root, 'var/lib/istio')).uid).toBe(0);
      const sidecarEnv = join(envoy, 'sidecar.env');
      if (existsSync(sidecarEnv) || lstatSync(envoy).isSymbolicLink()) {
        expect(lstatSync(sidecarEnv).uid).toBe(0);
      }
    }

    const plantedPath: Record<PlantKind, string> = {
      link: 'var/lib/istio/envoy/sidecar.env',
      mode: 'var/lib/istio/envoy/sidecar.env',
      swap: 'var/lib/istio/envoy',
    };
    const checkSays: Record<PlantKind, string> = {
      link: `symbolic link, owner istio-proxy \\(uid ${PROXY_UID}\\), mode 0777: a symbolic link to '`,
      mode: `regular file, owner istio-proxy \\(uid ${PROXY_UID}\\), mode 0666: owned by istio-proxy`,
      swap: `symbolic link, owner istio-proxy \\(uid ${PROXY_UID}\\), mode 0777: a symbolic link to '`,
    };
    const repairSays: Record<PlantKind, string> = {
      link: 'istio-sidecar-repair: removed /var/lib/istio/envoy/sidecar.env (symbolic link',
      mode: `istio-sidecar-repair: moved aside /var/lib/istio/envoy/sidecar.env (regular file, owner istio-proxy (uid ${PROXY_UID}), mode 0666`,
      swap: 'istio-sidecar-repair: moved aside /var/lib/istio/envoy (symbolic link',
    };

    describe.each(PLANT_KINDS)('%s', (kind) => {
      it.each(WRITERS)(
        'before the first take-back, written by %s: the check refuses and names it, istio’s start repairs it, and the line never runs as root',
        async (_, writer) => {
          const root = vm(false);
          expect(Object.values(plant(root, kind, writer))).not.toContain('refused');

          const check = await checkRoot(root);
          expect(check.code).toBe(1);
          expect(check.stderr).toMatch(refusal(root, plantedPath[kind], checkSays[kind]));
          expect(check.stderr).toMatch(
            refusal(
              root,
              'var/lib/istio',
              `directory, owner istio-proxy \\(uid ${PROXY_UID}\\), mode 0755: owned by istio-proxy`,
            ),
          );
          expect(check.stderr).toContain('istio-sidecar-check: istio does not start');

          const istio = await startIstio(root);
          expect(istio.journal).toContain(repairSays[kind]);
          expect(istio.started).toBe(true);
          expect(plantedLineRan(root)).toBe(false);
          expect((await checkRoot(root)).code).toBe(0);
          expectTakenBack(root);
        },
      );

      it.each(WRITERS)(
        'after Istio’s package gave envoy back to istio-proxy, written by %s: refused, repaired at the next start, never run as root',
        async (_, writer) => {
          const root = vm(true);
          expect((await checkRoot(root)).code).toBe(0);
          upgradeIstio(root);
          expect(statSync(join(root, 'var/lib/istio/envoy')).uid).toBe(PROXY_UID);
          const steps = plant(root, kind, writer);
          if (kind === 'swap') {
            // /var/lib/istio stays root's across Istio's upgrades: the swap itself is refused.
            expect(steps['swap-dir']).toBe('refused');
          } else {
            expect(Object.values(steps)).not.toContain('refused');
          }

          const check = await checkRoot(root);
          expect(check.code).toBe(1);
          expect(check.stderr).toMatch(
            refusal(
              root,
              'var/lib/istio/envoy',
              `directory, owner istio-proxy \\(uid ${PROXY_UID}\\), mode 0755: owned by istio-proxy`,
            ),
          );
          if (kind !== 'swap') {
            expect(check.stderr).toMatch(refusal(root, plantedPath[kind], checkSays[kind]));
          }

          const istio = await startIstio(root);
          if (kind !== 'swap') expect(istio.journal).toContain(repairSays[kind]);
          expect(istio.journal).toContain(
            'istio-sidecar-repair: took back /var/lib/istio/envoy: was directory, owner istio-proxy',
          );
          expect(istio.started).toBe(true);
          expect(plantedLineRan(root)).toBe(false);
          expect((await checkRoot(root)).code).toBe(0);
          expectTakenBack(root);
        },
      );
    });

    it.each(PLANT_KINDS)(
      'without the guard, the %s plant runs as root at istio’s start (what the guard is for)',
      async (kind) => {
        const root = vm(false);
        plant(root, kind, PROXY_UID);
        const guard = SIDECAR_LINKS.find(([link]) => link.includes('istio.service.d'))?.[0] ?? '';
        rmSync(join(root, guard));
        const istio = await startIstio(root);
        expect(istio.started).toBe(true);
        expect(plantedLineRan(root)).toBe(true);
      },
    );

    it('a start the check refuses runs no clean-up that sources the files: the guard holds back ExecStopPost=', async () => {
      const root = vm(false);
      plant(root, 'mode', STRANGER_UID);
      // A take-back the repair refuses to apply (an older copy with its Z line), so the plant
      // stays: istio's start is refused, and systemd still runs ExecStopPost=.
      const conf = join(root, SIDECAR_LINKS[0]?.[0] ?? '');
      rmSync(conf);
      writeFileSync(
        conf,
        'd /var/lib/istio/envoy 0755 registrar-agent root -\nZ /var/lib/istio/envoy - registrar-agent root -\n',
      );
      const istio = await startIstio(root);
      expect(istio.started).toBe(false);
      expect(istio.journal).toContain('is an older take-back: its Z line');
      expect(istio.journal).toContain("not running '/usr/local/bin/istio-start.sh clean'");
      expect(plantedLineRan(root)).toBe(false);

      // The same start with Istio's own ExecStopPost= (no guard on it) runs the planted line.
      const guard = join(root, SIDECAR_LINKS[1]?.[0] ?? '');
      rmSync(guard);
      writeFileSync(
        guard,
        '[Service]\nExecStartPre=/opt/registrar-agent/istio-sidecar-repair.sh\nExecStartPre=/opt/registrar-agent/istio-sidecar-check.sh\n',
      );
      const unguarded = await startIstio(root);
      expect(unguarded.started).toBe(false);
      expect(plantedLineRan(root)).toBe(true);
    });

    it('the repair reports nothing on a layout it already took back, and leaves the files root may read in place', async () => {
      const root = vm(true);
      const clusterEnv = join(root, 'var/lib/istio/envoy/cluster.env');
      writeFileSync(clusterEnv, "ISTIO_SERVICE='web'\n");
      execFileSync('chown', [`${layouts.at(-1)?.agentUid}`, clusterEnv]);
      const inode = statSync(clusterEnv).ino;
      const again = await repairRoot(root);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain('istio-sidecar-repair: nothing to repair');
      expect(statSync(clusterEnv).ino).toBe(inode);
      const istio = await startIstio(root);
      expect(istio.journal).toContain('istio-start.sh start: sourced its files as uid 0');
      expect(istio.journal).toContain('istio-start.sh clean: sourced its files as uid 0');
    });
  },
);
