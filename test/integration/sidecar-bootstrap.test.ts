import { execFileSync } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { fullPaths, resolveOwner } from '../../agent/sidecar-files.ts';
import { SIDECAR_DEFAULTS } from '../../agent/sidecar-settings.ts';
import { meshConfigProblems } from '../../lib/protocol/sidecar-message.ts';
import { NAMESPACE } from '../fixtures/agent-testbed.ts';
import { jwtClaims } from '../fixtures/kube-identity-stand-in.ts';
import {
  ISTIOD_ADDRESS,
  SERVICE_ACCOUNT,
  type SidecarTestbed,
  startSidecarTestbed,
} from '../fixtures/sidecar-testbed.ts';
import { eventually } from '../fixtures/websocket-client.ts';

// The real agent, against the local runtime projecting into the kube-apiserver STAND-IN (no
// real API server runs here), writes istio-proxy's files under a temporary root.

let testbed: SidecarTestbed | undefined;
afterEach(async () => {
  await testbed?.close();
  testbed = undefined;
});

const paths = (root: string) => fullPaths({ ...SIDECAR_DEFAULTS, prefix: root });

/** cluster.env as istio-start.sh reads it: sourced by a shell with `set -a`. */
function sourced(file: string): Record<string, string> {
  const out = execFileSync('/bin/sh', ['-c', 'set -a; . "$0"; env -0', file], {
    env: {},
    encoding: 'utf8',
  });
  return Object.fromEntries(
    out
      .split('\0')
      .filter(Boolean)
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

describe('sidecar bootstrap: the agent puts the VM into the mesh', () => {
  it('writes every file istio-proxy reads, with modes and owner, and a token for the entry’s own service account', async () => {
    testbed = await startSidecarTestbed();
    const files = paths(testbed.root);
    await mkdir(join(testbed.root, 'etc'), { recursive: true });
    await writeFile(files.hosts, '127.0.0.1 localhost\n', { mode: 0o644 });
    const changes = join(testbed.root, 'changes');
    const agent = await testbed.sidecarAgent({
      sidecar: { onChange: `echo changed >> ${changes}` },
    });
    await eventually(() => agent.sidecarEvents.find((e) => e.type === 'token-written'), 15_000);

    const env = sourced(files.clusterEnv);
    expect(env).toMatchObject({
      SERVICE_ACCOUNT,
      ISTIO_NAMESPACE: NAMESPACE,
      POD_NAMESPACE: NAMESPACE,
      ISTIO_SERVICE: 'web.shop',
      ISTIO_INBOUND_PORTS: '8080,9090',
      CANONICAL_SERVICE: 'web',
      CANONICAL_REVISION: 'v1',
      ISTIO_META_WORKLOAD_NAME: 'web',
      TRUST_DOMAIN: 'cluster.local',
      ISTIO_META_CLUSTER_ID: 'Kubernetes',
    });
    expect(JSON.parse(env.ISTIO_METAJSON_LABELS ?? '')).toMatchObject({
      app: 'web',
      'service.istio.io/canonical-name': 'web',
    });
    // The registrar owns the entry: istiod must not auto-register the proxy again.
    expect(env).not.toHaveProperty('ISTIO_META_AUTO_REGISTER_GROUP');

    const mesh = parseYaml(await readFile(files.meshConfig, 'utf8'));
    // The MeshConfig keys istio-proxy reads, strictly (no package carries Istio's schema).
    expect(meshConfigProblems(mesh)).toEqual([]);
    expect(mesh.defaultConfig.discoveryAddress).toBe('istiod.istio-system.svc:15012');
    // No readinessProbe: istio-agent must not report health to istiod beside the registrar.
    expect(mesh.defaultConfig).not.toHaveProperty('readinessProbe');
    expect(mesh.defaultConfig.proxyMetadata.SERVICE_ACCOUNT).toBe(SERVICE_ACCOUNT);

    expect(await readFile(files.rootCert, 'utf8')).toBe(testbed.rootCert);
    expect(await readFile(files.hosts, 'utf8')).toBe(
      `127.0.0.1 localhost\n${ISTIOD_ADDRESS} istiod.istio-system.svc # managed by registrar-agent (istiod)\n`,
    );

    const token = await readFile(files.token, 'utf8');
    expect(jwtClaims(token)).toMatchObject({
      sub: 'system:serviceaccount:shop:web',
      aud: ['istio-ca'],
    });
    const [issued] = testbed.api.issuedTokens();
    expect(issued).toMatchObject({ namespace: NAMESPACE, serviceAccount: SERVICE_ACCOUNT });
    expect(issued?.expirationSeconds).toBe(3600);

    // Every file is the agent's own (the proxy's user owns none of them); the mesh identity is
    // readable by the proxy's group and nobody else.
    const nobody = await resolveOwner('nobody');
    const self = process.geteuid?.() ?? 0;
    const tokenStat = await stat(files.token);
    expect(tokenStat.mode & 0o777).toBe(0o640);
    expect([tokenStat.uid, tokenStat.gid]).toEqual([self, nobody.gid]);
    for (const file of [files.clusterEnv, files.meshConfig, files.rootCert, files.hosts]) {
      const info = await stat(file);
      expect(info.mode & 0o777, file).toBe(0o644);
      expect(info.uid, file).toBe(self);
    }
    expect(await readFile(changes, 'utf8')).toBe('changed\n');
    // Never logged: not the token, not even in part; the --debug trace of the reply shows it
    // redacted (the test logger records debug lines).
    expect(agent.logs.join('\n')).not.toContain(token.split('.')[1]);
    expect(
      agent.logs.some((line) => line.includes('received') && line.includes('<redacted>')),
    ).toBe(true);
    expect(
      agent.logs.some((line) => line.includes('sidecar bootstrapped for shop/web-10.0.0.7')),
    ).toBe(true);
  });

  it('refreshes the token before it expires, leaving unchanged files untouched', async () => {
    // The stand-in issues 3 s tokens (as --service-account-max-token-expiration would cap).
    testbed = await startSidecarTestbed({ maxTokenSeconds: 3 });
    const files = paths(testbed.root);
    const changes = join(testbed.root, 'changes');
    const agent = await testbed.sidecarAgent({
      sidecar: { onChange: `echo changed >> ${changes}` },
    });
    const writes = () => agent.sidecarEvents.filter((e) => e.type === 'token-written');
    await eventually(() => writes().length >= 1, 15_000);
    const clusterEnvWritten = (await stat(files.clusterEnv)).mtimeMs;
    await eventually(() => writes().length >= 3, 20_000);

    const tokens = testbed.api.issuedTokens();
    expect(new Set(tokens.map((t) => t.token)).size).toBe(tokens.length);
    const seen = writes();
    for (let i = 1; i < seen.length; i += 1) {
      const previous = seen[i - 1] as (typeof seen)[number] & { expiresAt: string };
      expect(seen[i]?.at, `refresh ${i}`).toBeLessThan(Date.parse(previous.expiresAt));
    }
    expect(await readFile(files.token, 'utf8')).toBe(tokens.at(-1)?.token);
    expect((await stat(files.clusterEnv)).mtimeMs).toBe(clusterEnvWritten);
    // The on-change command ran for the bootstrap, not for each token.
    expect(await readFile(changes, 'utf8')).toBe('changed\n');
  });

  it('asks again after every reconnect', async () => {
    testbed = await startSidecarTestbed();
    const agent = await testbed.sidecarAgent();
    await eventually(() => agent.sidecarEvents.find((e) => e.type === 'token-written'), 15_000);
    const before = testbed.api.issuedTokens().length;
    const record = await testbed.bed.registry.getEntry({
      namespace: NAMESPACE,
      name: 'web-10.0.0.7',
    });
    const [connectionId] = record?.connection?.connectionIds ?? [];
    const closed = await fetch(
      `${testbed.bed.runtime.managementUrl}/@connections/${encodeURIComponent(connectionId ?? '')}`,
      { method: 'DELETE' },
    );
    expect(closed.status).toBe(204);
    await eventually(
      () => agent.events.find((e) => e.type === 'registered' && e.linkId === 2),
      15_000,
    );
    const registeredAgain = agent.events.find((e) => e.type === 'registered' && e.linkId === 2);
    const refreshed = await eventually(
      () =>
        agent.sidecarEvents.find(
          (e) => e.type === 'token-written' && e.at >= (registeredAgain?.at ?? Infinity),
        ),
      15_000,
    );
    expect(refreshed).toBeDefined();
    expect(testbed.api.issuedTokens().length).toBe(before + 1);
  });

  it('without a cluster: registration works as before, and the agent says once that the bootstrap is not available', async () => {
    testbed = await startSidecarTestbed({ cluster: false });
    const agent = await testbed.sidecarAgent();
    await eventually(() => agent.sidecarEvents.find((e) => e.type === 'sidecar-refused'), 15_000);
    const entry = await testbed.bed.entry('web-10.0.0.7');
    expect(entry?.connected).toBe(true);
    const record = await testbed.bed.registry.getEntry({
      namespace: NAMESPACE,
      name: 'web-10.0.0.7',
    });
    await fetch(
      `${testbed.bed.runtime.managementUrl}/@connections/${encodeURIComponent(record?.connection?.connectionIds[0] ?? '')}`,
      { method: 'DELETE' },
    );
    await eventually(
      () =>
        agent.sidecarEvents.filter((e) => e.type === 'sidecar-refused').length >= 2 || undefined,
      15_000,
    );
    const said = agent.logs.filter(
      (line) =>
        line.includes('the sidecar bootstrap is not available') && !line.includes('"debug"'),
    );
    expect(said).toHaveLength(1);
    expect((await testbed.bed.entry('web-10.0.0.7'))?.connected).toBe(true);
    await expect(stat(paths(testbed.root).token)).rejects.toThrow();
  });
});
