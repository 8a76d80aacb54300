import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullPaths } from '../../agent/sidecar-files.ts';
import { SIDECAR_DEFAULTS } from '../../agent/sidecar-settings.ts';
import { buildBootstrap } from '../../lib/mesh-identity/bootstrap.ts';
import { readMeshSettings } from '../../lib/mesh-identity/mesh-settings.ts';
import { createTestSigner } from '../fixtures/instance-identity-signer.ts';
import {
  shAs as as,
  asUserArgs,
  PROXY_UID as PROXY,
  prepareSidecarLayout,
  type SidecarLayout,
  STRANGER_UID as STRANGER,
  sidecarLayoutAvailable,
} from '../fixtures/sidecar-layout.ts';

/**
 * The privilege design of `--sidecar` on a VM laid out as Istio's package and VM guide leave it,
 * then as the agent's packaging fixes it (test/fixtures/sidecar-layout.ts: the real
 * systemd-sysusers, and the packaged repair running the real systemd-tmpfiles, under a
 * temporary root; the plants of issue 43 are test/integration/sidecar-plants.test.ts). The agent's writer (bundled,
 * run by the system's node) writes as registrar-agent, never root. Then each attacker of
 * docs/security.md's VM side tries: istio-proxy after a compromise of Envoy, and another local
 * user. The whole agent, unprivileged, is test/integration/sidecar-unprivileged-agent.test.ts.
 */
const REPO = new URL('../../', import.meta.url).pathname;
let layout: SidecarLayout | undefined;
let root = '';
let agentUid = 0;
let work = '';

/** The agent's writer, run as registrar-agent: the report it prints. */
function writeAsAgent(rootCert: string) {
  const bootstrap = buildBootstrap(
    {
      namespace: 'shop',
      group: 'web',
      serviceAccount: 'web',
      labels: {},
      groupLabels: {},
      ports: { http: 8080 },
      network: undefined,
    },
    readMeshSettings({ REGISTRAR_MESH_ISTIOD_ADDRESS: '10.1.2.3' }),
    rootCert,
  );
  const out = execFileSync(
    'setpriv',
    [...asUserArgs(agentUid), '/usr/bin/node', join(work, 'writer.mjs')],
    { input: JSON.stringify({ root, bootstrap, proxy: `${PROXY}:${PROXY}` }), encoding: 'utf8' },
  );
  return JSON.parse(out) as { written: string[]; notWritten: { path: string; lines: string[] }[] };
}

const paths = () => fullPaths({ ...SIDECAR_DEFAULTS, prefix: root });
const pem = () => createTestSigner('istio root CA stand-in').certificatePem;

describe.skipIf(!sidecarLayoutAvailable())(
  'sidecar privileges: the agent as its own user, on the layout its packaging makes (skipped unless root with setpriv and systemd)',
  () => {
    beforeAll(async () => {
      layout = prepareSidecarLayout();
      ({ root, work, agentUid } = layout);
      // The agent's own file writer, bundled for the system's node (the test runner's node
      // lives under root's home, which other users cannot reach).
      writeFileSync(
        join(work, 'writer.ts'),
        `import { readFileSync } from 'node:fs';
import { fullPaths, resolveOwner, writeBootstrap, writeToken } from '${REPO}agent/sidecar-files.ts';
import { SIDECAR_DEFAULTS } from '${REPO}agent/sidecar-settings.ts';
const input = JSON.parse(readFileSync(0, 'utf8'));
const paths = fullPaths({ ...SIDECAR_DEFAULTS, prefix: input.root });
const proxy = await resolveOwner(input.proxy);
const report = await writeBootstrap(paths, input.bootstrap, proxy);
await writeToken(paths.token, 'aaa.bbb.ccc', proxy);
process.stdout.write(JSON.stringify(report));
`,
      );
      await build({
        entryPoints: [join(work, 'writer.ts')],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        outfile: join(work, 'writer.mjs'),
        banner: {
          js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
        },
        logLevel: 'warning',
      });
    }, 60_000);

    afterAll(() => layout?.close());

    it('writes every file as registrar-agent, none owned by istio-proxy, and leaves root’s hosts file to the install step', () => {
      expect(agentUid).toBeGreaterThan(0);
      const report = writeAsAgent(pem());
      const p = paths();
      expect(report.written.sort()).toEqual([p.clusterEnv, p.meshConfig, p.rootCert].sort());
      for (const file of [p.clusterEnv, p.meshConfig, p.rootCert, p.token]) {
        expect(statSync(file).uid, file).toBe(agentUid);
      }
      expect(statSync(p.token).gid).toBe(PROXY);
      expect(statSync(p.token).mode & 0o777).toBe(0o640);
      // /etc is root's: the line is named for the install step, and nothing is written as root.
      expect(report.notWritten).toEqual([
        { path: p.hosts, lines: ['10.1.2.3 istiod.istio-system.svc'] },
      ]);
      expect(readFileSync(p.hosts, 'utf8')).toBe('127.0.0.1 localhost\n');
      expect(readFileSync(p.clusterEnv, 'utf8')).not.toContain('proxy-owned');
    });

    it('a compromised istio-proxy cannot change what root sources, but reads what it needs', () => {
      const p = paths();
      const envoy = join(root, 'var/lib/istio/envoy');
      // Each attempt would make root run the proxy's code at istio's next start.
      expect(as(PROXY, `echo BASH_ENV=/tmp/x >> ${p.clusterEnv}`)).not.toBe(0);
      expect(as(PROXY, `ln -sf /tmp/x ${envoy}/cluster.env`)).not.toBe(0);
      expect(as(PROXY, `mv ${envoy} ${root}/var/lib/istio/moved`)).not.toBe(0);
      expect(as(PROXY, `echo BASH_ENV=/tmp/x >> ${envoy}/sidecar.env`)).not.toBe(0);
      expect(as(PROXY, `touch ${root}/var/lib/istio/config/mesh`)).not.toBe(0);
      expect(readFileSync(p.clusterEnv, 'utf8')).not.toContain('BASH_ENV');
      // No directory above cluster.env, and no file beside it that root sources, is the proxy's.
      for (const path of ['var/lib/istio', 'var/lib/istio/envoy']) {
        expect(statSync(join(root, path)).uid, path).not.toBe(PROXY);
      }
      // The guide's `chown -R` made Istio's sidecar.env the proxy's, so what is in it may be
      // the proxy's too: the take-back moved it aside instead of handing it to the agent.
      expect(existsSync(join(envoy, 'sidecar.env'))).toBe(false);
      expect(readdirSync(envoy).some((name) => name.startsWith('sidecar.env.untrusted-'))).toBe(
        true,
      );
      // What istio-proxy reads, and where it keeps its own certificates.
      expect(as(PROXY, `cat ${p.token} ${p.meshConfig} ${p.rootCert} > /dev/null`)).toBe(0);
      expect(as(PROXY, `echo cert > ${root}/etc/certs/cert-chain.pem`)).toBe(0);
    });

    it('a link istio-proxy plants where it may write is replaced, never written through', () => {
      const p = paths();
      const before = readFileSync(p.clusterEnv, 'utf8');
      expect(as(PROXY, `rm -f ${p.rootCert} && ln -s ${p.clusterEnv} ${p.rootCert}`)).toBe(0);
      const report = writeAsAgent(`${pem()}`);
      expect(report.written).toContain(p.rootCert);
      expect(lstatSync(p.rootCert).isSymbolicLink()).toBe(false);
      expect(readFileSync(p.clusterEnv, 'utf8')).toBe(before);
    });

    it('another local user reads no mesh identity and writes nothing', () => {
      const p = paths();
      expect(as(STRANGER, `cat ${p.token}`)).not.toBe(0);
      for (const file of [p.clusterEnv, p.meshConfig, p.rootCert]) {
        expect(as(STRANGER, `echo x >> ${file}`), file).not.toBe(0);
      }
    });
  },
);
