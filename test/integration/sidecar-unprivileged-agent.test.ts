import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullPaths } from '../../agent/sidecar-files.ts';
import { SIDECAR_DEFAULTS } from '../../agent/sidecar-settings.ts';
import { NAMESPACE } from '../fixtures/agent-testbed.ts';
import { killChild } from '../fixtures/agent-unit.ts';
import {
  asUserArgs,
  PROXY_UID,
  prepareSidecarLayout,
  type SidecarLayout,
  sidecarLayoutAvailable,
} from '../fixtures/sidecar-layout.ts';
import {
  ISTIOD_ADDRESS,
  SERVICE_ACCOUNT,
  type SidecarTestbed,
  startSidecarTestbed,
} from '../fixtures/sidecar-testbed.ts';
import { eventually } from '../fixtures/websocket-client.ts';

/**
 * The whole agent, bundled as a VM runs it, started as registrar-agent (never root) on the
 * layout its packaging makes (test/fixtures/sidecar-layout.ts), against the local runtime and
 * the kube-apiserver STAND-IN: it registers, bootstraps the sidecar, names the hosts line for
 * the install step instead of writing root's /etc/hosts, and does not run the group's exec
 * probe, whose command could otherwise rewrite the cluster.env root sources.
 */
const REPO = new URL('../../', import.meta.url).pathname;
let layout: SidecarLayout | undefined;
let testbed: SidecarTestbed | undefined;
let agent: ChildProcess | undefined;
const logs: { msg: string; [field: string]: unknown }[] = [];

describe.skipIf(!sidecarLayoutAvailable())(
  'the agent with --sidecar as registrar-agent (skipped unless root with setpriv and systemd)',
  () => {
    beforeAll(async () => {
      layout = prepareSidecarLayout();
      testbed = await startSidecarTestbed();
      // The group's editor adds an exec probe that would rewrite what root sources.
      await testbed.bed.registry.applyGroup({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: { name: 'web', namespace: NAMESPACE },
        spec: {
          metadata: { labels: { app: 'web', version: 'v1' } },
          template: { ports: { http: 8080 }, serviceAccount: SERVICE_ACCOUNT },
          probe: {
            exec: {
              command: ['sh', '-c', `echo BASH_ENV=/tmp/x >> ${fullPaths(paths()).clusterEnv}`],
            },
            periodSeconds: 1,
            failureThreshold: 1,
          },
        },
      });
      // The bundle, and node where every user may run it (the runner's is under root's home).
      execFileSync('sh', [join(REPO, 'packaging/build-agent.sh')], {
        env: { ...process.env, OUT_DIR: layout.work },
        stdio: 'ignore',
      });
      const node = join(layout.work, 'node');
      copyFileSync(process.execPath, node);
      chmodSync(node, 0o755);
      agent = spawn(
        'setpriv',
        [
          ...asUserArgs(layout.agentUid),
          node,
          join(layout.work, 'registrar-agent.mjs'),
          ...['--url', testbed.bed.runtime.url, '--group', 'web', '--namespace', NAMESPACE],
          ...['--ip', '10.0.0.7', '--no-imds', '--log-format', 'json', '--sidecar'],
          ...['--sidecar-prefix', layout.root, '--sidecar-owner', `${PROXY_UID}:${PROXY_UID}`],
          ...['--memory-reclaim-after', '0'],
        ],
        {
          env: { PATH: process.env.PATH ?? '', REGISTRAR_AGENT_TOKEN: testbed.token },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let pending = '';
      agent.stderr?.on('data', (chunk: Buffer) => {
        const parts = (pending + chunk.toString('utf8')).split('\n');
        pending = parts.pop() ?? '';
        for (const part of parts) if (part.startsWith('{')) logs.push(JSON.parse(part));
      });
      await eventually(
        () => logs.find((line) => line.msg.startsWith('mesh identity refreshed')),
        60_000,
      );
    }, 120_000);

    afterAll(async () => {
      await killChild(agent);
      await testbed?.close();
      layout?.close();
    });

    const paths = () => ({ ...SIDECAR_DEFAULTS, prefix: layout?.root ?? '/' });

    it('runs as registrar-agent with no capability, and writes every file as that user', () => {
      const status = readFileSync(`/proc/${agent?.pid}/status`, 'utf8');
      // setpriv execs node in place: the process is the agent.
      expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(layout?.agentUid));
      expect(/^CapEff:\s+(\w+)/m.exec(status)?.[1]).toBe('0000000000000000');
      const p = fullPaths(paths());
      for (const file of [p.clusterEnv, p.meshConfig, p.rootCert, p.token]) {
        expect(statSync(file).uid, file).toBe(layout?.agentUid);
      }
      expect(statSync(p.token).gid).toBe(PROXY_UID);
    });

    it('leaves root’s hosts file alone and names the line the install step adds', () => {
      const p = fullPaths(paths());
      expect(readFileSync(p.hosts, 'utf8')).toBe('127.0.0.1 localhost\n');
      const said = logs.filter((line) => line.msg.includes("is not the agent's to write"));
      expect(said).toHaveLength(1);
      expect(said[0]?.msg).toContain(`${ISTIOD_ADDRESS} istiod.istio-system.svc`);
    });

    it('does not run the group’s exec probe, reports why, and cluster.env stays as written', async () => {
      const deadline = Date.now() + 30_000;
      let entry = await testbed?.bed.entry('web-10.0.0.7');
      while (entry?.healthy !== 'False' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        entry = await testbed?.bed.entry('web-10.0.0.7');
      }
      expect(entry?.we.status?.conditions?.[0]?.message).toContain(
        'exec probes do not run with --sidecar',
      );
      const clusterEnv = readFileSync(fullPaths(paths()).clusterEnv, 'utf8');
      expect(clusterEnv).not.toContain('BASH_ENV');
      expect(clusterEnv).toContain("ISTIO_SERVICE='web.shop'");
      expect(existsSync(join(layout?.root ?? '/', 'var/lib/istio/envoy/cluster.env'))).toBe(true);
    }, 45_000);
  },
);
