import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  linkSync,
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runProgram } from '../fixtures/run-program.ts';
import {
  asUserArgs,
  PROXY_UID,
  prepareSidecarLayout,
  type SidecarLayout,
  STRANGER_UID,
  sidecarLayoutAvailable,
} from '../fixtures/sidecar-layout.ts';
import { checkRoot, repairRoot, SIDECAR_LINKS } from '../fixtures/sidecar-root-steps.ts';

/**
 * packaging/istio-sidecar-check.sh and istio-sidecar-repair.sh one case at a time, on a VM's
 * root (test/fixtures/sidecar-layout.ts, taken back by the repair with the real
 * systemd-tmpfiles): what the check accepts and refuses, and how it says so (the path, its
 * type, owner and mode, and the command that repairs it); what the repair refuses to start
 * from (nothing changed); what it changes and reports. The three plants of issue 43 against
 * istio's whole start are test/integration/sidecar-plants.test.ts.
 */
const REPO = new URL('../../', import.meta.url).pathname;
const CHECK = join(REPO, 'packaging/istio-sidecar-check.sh');
const REPAIR_COMMAND = '/opt/registrar-agent/istio-sidecar-repair.sh';

/** Every path under `root`: type, owner, mode, and a link's target or a file's content. */
function snapshot(root: string): Record<string, string> {
  const entries: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stat = lstatSync(path);
      const what = stat.isSymbolicLink()
        ? `-> ${readlinkSync(path)}`
        : stat.isFile()
          ? readFileSync(path, 'utf8').slice(0, 200)
          : '';
      entries[path.slice(root.length)] = `${stat.mode.toString(8)} ${stat.uid}:${stat.gid} ${what}`;
      if (stat.isDirectory()) walk(path);
    }
  };
  walk(root);
  return entries;
}

describe.runIf(sidecarLayoutAvailable() || process.env.CI === 'true')(
  'the sidecar check and repair, case by case (needs root with setpriv and systemd; always run in CI)',
  () => {
    const layouts: SidecarLayout[] = [];
    afterAll(() => {
      for (const layout of layouts) layout.close();
    });
    const vm = (takeBack = true) => {
      const layout = prepareSidecarLayout({ takeBack });
      layouts.push(layout);
      return layout;
    };

    describe('the check', () => {
      it('accepts the taken-back layout, names how much it examined, and changes nothing', async () => {
        const { root } = vm();
        const before = snapshot(root);
        const check = await checkRoot(root);
        expect(check.code).toBe(0);
        expect(check.stderr).toBe('');
        // istio-start.sh and pilot-agent (Istio's package); cluster.env, sidecar.env and the
        // mesh file were the proxy's, so the take-back moved them aside: absent is safe.
        expect(check.stdout).toBe(
          `istio-sidecar-check: safe: 2 file(s) root reads or runs for istio under ${root}, and every directory above them, are root's or registrar-agent's, writable by no one else, with no link on the way\n`,
        );
        expect(snapshot(root)).toEqual(before);
      });

      it('refuses the layout as Istio leaves it, naming each path with its type, owner, mode and the repair, and changes nothing', async () => {
        const { root } = vm(false);
        const before = snapshot(root);
        const check = await checkRoot(root);
        expect(check.code).toBe(1);
        const lines = check.stderr.trim().split('\n');
        const repair = `repair: ${REPAIR_COMMAND} --root=${root}`;
        expect(lines).toEqual([
          `istio-sidecar-check: ${root}/var/lib/istio: directory, owner istio-proxy (uid ${PROXY_UID}), mode 0755: owned by istio-proxy, who could change it: root must own it; ${repair}`,
          `istio-sidecar-check: ${root}/var/lib/istio/envoy: directory, owner istio-proxy (uid ${PROXY_UID}), mode 0755: owned by istio-proxy, who could change it: root or registrar-agent must own it; ${repair}`,
          `istio-sidecar-check: ${root}/var/lib/istio/envoy/sidecar.env: regular file, owner istio-proxy (uid ${PROXY_UID}), mode 0644: owned by istio-proxy, who could change it: root must own it; ${repair}`,
          `istio-sidecar-check: ${root}/var/lib/istio/envoy/cluster.env: regular file, owner istio-proxy (uid ${PROXY_UID}), mode 0644: owned by istio-proxy, who could change it: root or registrar-agent must own it; ${repair}`,
          `istio-sidecar-check: ${root}/var/lib/istio/config: directory, owner istio-proxy (uid ${PROXY_UID}), mode 0755: owned by istio-proxy, who could change it: root or registrar-agent must own it; ${repair}`,
          `istio-sidecar-check: ${root}/var/lib/istio/config/mesh: regular empty file, owner istio-proxy (uid ${PROXY_UID}), mode 0644: owned by istio-proxy, who could change it: root or registrar-agent must own it; ${repair}`,
          'istio-sidecar-check: istio does not start: 6 path(s) above could make root run what another user wrote; repair them, then: systemctl restart istio',
        ]);
        expect(check.stdout).toBe('');
        expect(snapshot(root)).toEqual(before);
      });

      it('names a link’s target on one line, whatever its maker put in it (no forged journal line)', async () => {
        const { root } = vm();
        chownSync(join(root, 'var/lib/istio/envoy'), PROXY_UID, PROXY_UID);
        const sidecarEnv = join(root, 'var/lib/istio/envoy/sidecar.env');
        symlinkSync('/x\nistio-sidecar-check: safe: all is well', sidecarEnv);
        const check = await checkRoot(root);
        expect(check.code).toBe(1);
        expect(check.stderr).toContain(
          `${sidecarEnv}: symbolic link, owner root (uid 0), mode 0777: a symbolic link to '/x?istio-sidecar-check: safe: all is well': root would read whatever it points to`,
        );
        expect(check.stderr).not.toMatch(/^istio-sidecar-check: safe/m);
      });

      it('refuses a file system mounted inside Istio’s tree (it says what owner and mode it likes)', async () => {
        const { root, agentUid } = vm();
        const envoy = join(root, 'var/lib/istio/envoy');
        // In a mount namespace of its own, so the mount ends with the check.
        const check = await runProgram('unshare', [
          '--mount',
          '--propagation',
          'private',
          '--',
          'sh',
          '-c',
          `mount -t tmpfs -o mode=0755,uid=${agentUid} tmpfs "$1" && exec "$2" --root="$3"`,
          'sh',
          envoy,
          CHECK,
          root,
        ]);
        expect(check.code).toBe(1);
        expect(check.stderr).toContain(
          `${envoy}: directory, owner registrar-agent (uid ${agentUid}), mode 0755: a mount point in /var/lib/istio, whose owner and mode are what the mounted file system says; repair: as root: umount ${envoy}; then ${REPAIR_COMMAND} --root=${root}`,
        );
        expect((await checkRoot(root)).code).toBe(0);
      });

      it('refuses a system directory above them that another user owns, with the command that fixes it', async () => {
        const { root } = vm();
        chownSync(join(root, 'var/lib'), STRANGER_UID, STRANGER_UID);
        const check = await checkRoot(root);
        expect(check.code).toBe(1);
        expect(check.stderr).toContain(
          `istio-sidecar-check: ${root}/var/lib: directory, owner an unnamed user (uid ${STRANGER_UID}), mode 0755: owned by an unnamed user, who could change it: root must own it; repair: as root, make it a directory of root's: chown root:root ${root}/var/lib && chmod go-w ${root}/var/lib`,
        );
      });

      it('refuses a program root runs that its group may write, and says to put back Istio’s', async () => {
        const { root } = vm();
        chmodSync(join(root, 'usr/local/bin/istio-start.sh'), 0o775);
        const check = await checkRoot(root);
        expect(check.code).toBe(1);
        expect(check.stderr).toContain(
          `${root}/usr/local/bin/istio-start.sh: regular file, owner root (uid 0), mode 0775: writable by its group or by others; repair: put back the file Istio's package installs, as root (apt-get install --reinstall istio-sidecar, or dnf reinstall istio-sidecar)`,
        );
      });

      it('refuses a file root sources that has another name (a hard link made while istio-proxy owned its directory)', async () => {
        const { root, agentUid } = vm();
        const clusterEnv = join(root, 'var/lib/istio/envoy/cluster.env');
        writeFileSync(clusterEnv, "ISTIO_SERVICE='web'\n");
        chownSync(clusterEnv, agentUid, agentUid);
        expect((await checkRoot(root)).code).toBe(0);
        linkSync(clusterEnv, join(root, 'var/lib/istio/proxy/kept'));
        const check = await checkRoot(root);
        expect(check.code).toBe(1);
        expect(check.stderr).toContain(
          `${clusterEnv}: regular file, owner registrar-agent (uid ${agentUid}), mode 0644: it has 1 other name(s) (hard links)`,
        );
      });

      it('accepts cluster.env from the agent or root, but sidecar.env only from root (the agent never writes it)', async () => {
        const { root, agentUid } = vm();
        const envoy = join(root, 'var/lib/istio/envoy');
        writeFileSync(join(envoy, 'cluster.env'), "A='1'\n");
        chownSync(join(envoy, 'cluster.env'), agentUid, agentUid);
        writeFileSync(join(envoy, 'sidecar.env'), '# settings\n');
        expect((await checkRoot(root)).code).toBe(0);
        chownSync(join(envoy, 'sidecar.env'), agentUid, agentUid);
        const check = await checkRoot(root);
        expect(check.code).toBe(1);
        expect(check.stderr).toContain(
          `${envoy}/sidecar.env: regular file, owner registrar-agent (uid ${agentUid}), mode 0644: owned by registrar-agent, who could change it: root must own it`,
        );
      });

      it('runs the command after -- only when every path is safe, with its exit status', async () => {
        const { root } = vm();
        const ran = await runProgram(CHECK, [
          `--root=${root}`,
          '--',
          'sh',
          '-c',
          'echo ran; exit 3',
        ]);
        expect(ran.code).toBe(3);
        expect(ran.stdout).toContain('ran\n');
        chmodSync(join(root, 'var/lib/istio/envoy'), 0o777);
        const refused = await runProgram(CHECK, [`--root=${root}`, '--', 'sh', '-c', 'echo ran']);
        expect(refused.code).toBe(1);
        expect(refused.stdout).not.toContain('ran');
        expect(refused.stderr).toContain(
          "istio-sidecar-check: not running 'sh -c echo ran': it reads the same files as root",
        );
      });

      it('runs as the agent’s user too, without root, as the agent’s unit runs it at the agent’s start', () => {
        const { root, agentUid } = vm();
        const asAgent = () =>
          spawnSync(
            'setpriv',
            [
              ...asUserArgs(agentUid),
              join(root, 'opt/registrar-agent/istio-sidecar-check.sh'),
              `--root=${root}`,
            ],
            { encoding: 'utf8' },
          );
        expect(asAgent().status).toBe(0);
        chmodSync(join(root, 'var/lib/istio/config'), 0o777);
        const refused = asAgent();
        expect(refused.status).toBe(1);
        expect(refused.stderr).toContain(
          `${root}/var/lib/istio/config: directory, owner registrar-agent (uid ${agentUid}), mode 0777: writable by its group or by others`,
        );
      });

      it('refuses an argument it does not know, and a root that is not absolute, with its usage (2)', async () => {
        for (const args of [['--fix'], ['--root=relative/dir']]) {
          const result = await runProgram(CHECK, args);
          expect(result.code, args.join(' ')).toBe(2);
          expect(result.stderr).toBe(
            `istio-sidecar-check: unknown argument '${args[0]}'; usage: istio-sidecar-check [--root=DIR] [-- COMMAND [ARG...]]\n`,
          );
        }
      });
    });

    describe('the repair', () => {
      it('refuses to start when the take-back is not turned on, and changes nothing', async () => {
        const { root } = vm(false);
        rmSync(join(root, SIDECAR_LINKS[0]?.[0] ?? ''));
        const before = snapshot(root);
        const repair = await repairRoot(root);
        expect(repair.code).toBe(2);
        expect(repair.stderr).toBe(
          `istio-sidecar-repair: no ${root}/etc/tmpfiles.d/registrar-agent-sidecar.conf: the sidecar's take-back is not set up (docs/agent.md, "Put the VM in the mesh"); nothing changed\n`,
        );
        expect(snapshot(root)).toEqual(before);
      });

      it('refuses an older take-back whose Z line would give istio-proxy’s files to the agent, and changes nothing', async () => {
        const { root } = vm(false);
        const conf = join(root, 'usr/lib/tmpfiles.d/registrar-agent-sidecar.conf');
        rmSync(join(root, SIDECAR_LINKS[0]?.[0] ?? ''));
        execFileSync('mkdir', ['-p', join(root, 'usr/lib/tmpfiles.d')]);
        writeFileSync(conf, 'Z     /var/lib/istio/envoy  -  registrar-agent root -\n');
        const before = snapshot(root);
        const repair = await repairRoot(root);
        expect(repair.code).toBe(2);
        expect(repair.stderr).toContain(
          `istio-sidecar-repair: ${root}/usr/lib/tmpfiles.d/registrar-agent-sidecar.conf is an older take-back: its Z line gives istio-proxy's files to the agent with what it wrote in them; replace it with the package's: rm ${conf} && ln -s /opt/registrar-agent/sidecar/registrar-agent-sidecar.tmpfiles.conf ${root}/etc/tmpfiles.d/registrar-agent-sidecar.conf; nothing changed`,
        );
        expect(snapshot(root)).toEqual(before);
      });

      it('refuses to start before Istio’s package made istio-proxy, and changes nothing', async () => {
        const { root } = vm(false);
        writeFileSync(join(root, 'etc/group'), 'root:x:0:\n');
        const before = snapshot(root);
        const repair = await repairRoot(root);
        expect(repair.code).toBe(2);
        expect(repair.stderr).toContain(
          `istio-sidecar-repair: no group istio-proxy in ${root}/etc/group: install Istio's sidecar package (istio-sidecar) first; nothing changed`,
        );
        expect(snapshot(root)).toEqual(before);
      });

      it('takes the layout as Istio leaves it back, saying what it changed, then finds nothing to repair', async () => {
        const { root, agentUid } = vm(false);
        const first = await repairRoot(root);
        expect(first.code).toBe(0);
        const said = first.stdout.split('\n');
        expect(said).toContain(
          `istio-sidecar-repair: took back ${root}/var/lib/istio: was directory, owner istio-proxy (uid ${PROXY_UID}), mode 0755; now directory, owner root (uid 0), mode 0755`,
        );
        expect(said).toContain(
          `istio-sidecar-repair: took back ${root}/var/lib/istio/envoy: was directory, owner istio-proxy (uid ${PROXY_UID}), mode 0755; now directory, owner registrar-agent (uid ${agentUid}), mode 0755`,
        );
        expect(
          said.some((line) =>
            line.startsWith(
              `istio-sidecar-repair: moved aside ${root}/var/lib/istio/envoy/cluster.env (regular file, owner istio-proxy (uid ${PROXY_UID}), mode 0644: another user owns it) to ${root}/var/lib/istio/envoy/cluster.env.untrusted-`,
            ),
          ),
        ).toBe(true);
        expect(first.stdout).toContain(
          'registrar-agent writes it again at its next bootstrap (at once: systemctl restart registrar-agent)',
        );
        expect(said).toContain(
          "istio-sidecar-repair: 9 change(s) above; istio's check runs at its next start (systemctl restart istio)",
        );
        expect((await checkRoot(root)).code).toBe(0);
        const before = snapshot(root);
        const again = await repairRoot(root);
        expect(again.stdout).toContain('istio-sidecar-repair: nothing to repair');
        expect(snapshot(root)).toEqual(before);
      });

      it('moves aside the mesh file Istio’s upgrade gave istio-proxy, and keeps the agent’s cluster.env', async () => {
        const { root, agentUid } = vm();
        const clusterEnv = join(root, 'var/lib/istio/envoy/cluster.env');
        const mesh = join(root, 'var/lib/istio/config/mesh');
        for (const file of [clusterEnv, mesh]) {
          writeFileSync(file, 'written by the agent\n');
          chownSync(file, agentUid, agentUid);
        }
        // What Istio's postinst does at every configure (and `chown` follows no link here).
        for (const path of [
          'var/lib/istio/envoy',
          'var/lib/istio/config',
          'var/lib/istio/config/mesh',
        ]) {
          chownSync(join(root, path), PROXY_UID, PROXY_UID);
        }
        const repair = await repairRoot(root);
        expect(repair.code).toBe(0);
        expect(repair.stdout).toContain(
          `istio-sidecar-repair: moved aside ${mesh} (regular file, owner istio-proxy (uid ${PROXY_UID}), mode 0644: another user owns it) to ${mesh}.untrusted-`,
        );
        expect(readFileSync(clusterEnv, 'utf8')).toBe('written by the agent\n');
        expect(statSync(clusterEnv).uid).toBe(agentUid);
        expect((await checkRoot(root)).code).toBe(0);
      });

      it('removes a link planted where a file root reads belongs, and never touches what it points to', async () => {
        const { root } = vm();
        const shadow = join(root, 'etc/shadow-stand-in');
        writeFileSync(shadow, 'root:secret\n');
        const mesh = join(root, 'var/lib/istio/config/mesh');
        chownSync(join(root, 'var/lib/istio/config'), PROXY_UID, PROXY_UID);
        symlinkSync('/etc/shadow-stand-in', mesh);
        const shadowBefore = statSync(shadow);
        const repair = await repairRoot(root);
        expect(repair.stdout).toContain(
          `istio-sidecar-repair: removed ${mesh} (symbolic link, owner root (uid 0), mode 0777, to '/etc/shadow-stand-in'): root would have read whatever it points to`,
        );
        expect(() => lstatSync(mesh)).toThrow();
        expect(readFileSync(shadow, 'utf8')).toBe('root:secret\n');
        expect(statSync(shadow).uid).toBe(shadowBefore.uid);
        expect(statSync(shadow).mode).toBe(shadowBefore.mode);
      });
    });
  },
);
