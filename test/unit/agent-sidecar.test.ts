import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_TIMING } from '../../agent/config.ts';
import type { Reply } from '../../agent/connection.ts';
import { memoryLogger } from '../../agent/logger.ts';
import { writeSafely } from '../../agent/safe-files.ts';
import {
  redactSidecarToken,
  rootWarning,
  SidecarBootstrapper,
  type SidecarEvent,
} from '../../agent/sidecar-bootstrap.ts';
import { HOSTS_MARKER, mergeHosts, renderClusterEnv } from '../../agent/sidecar-files.ts';
import { SIDECAR_DEFAULTS } from '../../agent/sidecar-settings.ts';
import { buildBootstrap } from '../../lib/mesh-identity/bootstrap.ts';
import { readMeshSettings } from '../../lib/mesh-identity/mesh-settings.ts';
import { FakeLink } from '../fixtures/agent-fake-link.ts';
import { ManualClock } from '../fixtures/agent-manual-clock.ts';
import { createTestSigner } from '../fixtures/instance-identity-signer.ts';

/**
 * The agent's sidecar bootstrap with an in-memory link and a manual clock: what it says, when
 * it asks again, and what it refuses to write. The whole path over the real runtime is
 * test/integration/sidecar-bootstrap.test.ts.
 */
let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'agent-sidecar-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const PEM = createTestSigner('istio root CA stand-in').certificatePem;

function goodReply(clusterEnv?: Record<string, string>): Reply {
  const bootstrap = buildBootstrap(
    {
      namespace: 'shop',
      group: 'web',
      serviceAccount: 'web',
      labels: {},
      groupLabels: {},
      ports: {},
      network: undefined,
    },
    readMeshSettings({}),
    PEM,
  );
  if (clusterEnv) bootstrap.clusterEnv = clusterEnv;
  return {
    action: 'sidecar',
    ok: true,
    entry: 'shop/web-10.0.0.1',
    serviceAccount: 'web',
    bootstrap,
    token: {
      value: 'aaa.bbb.ccc',
      audience: 'istio-ca',
      expiresAt: '2030-01-01T01:00:00.000Z',
      expiresInSeconds: 3600,
    },
  };
}

function harness(respond: (n: number) => Reply) {
  const clock = new ManualClock();
  const logger = memoryLogger('text');
  const link = new FakeLink(clock, null);
  let asked = 0;
  link.respond = (action) => (action === 'sidecar' ? respond(asked++) : { action, ok: true });
  const events: (SidecarEvent & { at: number })[] = [];
  const bootstrapper = new SidecarBootstrapper({
    config: {
      ...SIDECAR_DEFAULTS,
      enabled: true,
      prefix: root,
      owner: String(process.getuid?.() ?? 0),
    },
    clock,
    logger,
    timing: DEFAULT_TIMING,
    currentLink: () => link,
    onEvent: (event) => events.push(event),
  });
  return { clock, logger, link, events, bootstrapper, asked: () => asked };
}

/** File writes are real I/O: wait for them in real time, then drive the manual clock on. */
async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Lines at warn or error: a repeat is logged at debug only. */
const said = (lines: string[], text: string) =>
  lines.filter((line) => line.includes(text) && !line.includes('DEBUG'));

const refusal = (code: string, message: string): Reply => ({ ok: false, error: { code, message } });

describe('sidecar bootstrap against registrars that cannot serve it', () => {
  it('says once that an older registrar does not know sidecar, and registration goes on', async () => {
    const h = harness(() => refusal('UnknownAction', "unknown action 'sidecar'"));
    h.bootstrapper.onRegistered();
    await h.clock.advance(0);
    h.bootstrapper.onRegistered(); // a reconnect
    await h.clock.advance(0);
    expect(h.asked()).toBe(2);
    expect(said(h.logger.lines, "does not know 'sidecar'")).toHaveLength(1);
    // Not asked again until the next registration: an old registrar stays old.
    expect(h.clock.pending()).toEqual([]);
    expect(h.link.closed).toBe(false);
  });

  it('says once that no cluster is configured, and asks again as after a refusal', async () => {
    const h = harness(() => refusal('SidecarUnavailable', 'no Kubernetes cluster is configured'));
    h.bootstrapper.onRegistered();
    await h.clock.advance(0);
    const [wait] = h.clock.pending();
    expect(wait).toBeGreaterThanOrEqual(DEFAULT_TIMING.refusalBackoffMs / 2);
    await h.clock.advance(DEFAULT_TIMING.refusalBackoffCapMs * 3);
    expect(h.asked()).toBeGreaterThanOrEqual(3);
    expect(said(h.logger.lines, 'not available')).toHaveLength(1);
    expect(h.link.closed).toBe(false);
  });

  it('writes nothing from a malformed answer (a shell command as a cluster.env key)', async () => {
    const h = harness(() => goodReply({ '$(reboot)': 'x' }));
    h.bootstrapper.onRegistered();
    await h.clock.advance(0);
    expect(h.logger.lines.join('\n')).toContain('malformed');
    await expect(stat(join(root, SIDECAR_DEFAULTS.paths.clusterEnv))).rejects.toThrow();
    expect(h.events.map((e) => e.type)).toEqual(['sidecar-failed']);
  });
});

describe('sidecar bootstrap refresh', () => {
  it('refreshes at 70-80 % of the token’s lifetime, and only logs what changed', async () => {
    const h = harness(() => goodReply());
    h.bootstrapper.onRegistered();
    await until(() => h.events.some((e) => e.type === 'token-written'));
    const first = h.events.find((e) => e.type === 'token-written');
    expect(first?.type === 'token-written' && first.refreshInMs).toBe(0.75 * 3600_000);
    await h.clock.advance(0.75 * 3600_000);
    await until(() => h.events.filter((e) => e.type === 'token-written').length === 2);
    expect(h.asked()).toBe(2);
    const written = h.events.filter((e) => e.type === 'sidecar-written');
    expect(written[1]?.type === 'sidecar-written' && written[1].written).toEqual([]);
    expect(h.logger.lines.filter((l) => l.includes('sidecar bootstrapped'))).toHaveLength(1);
    expect(h.logger.lines.join('\n')).not.toContain('aaa.bbb.ccc');
    h.bootstrapper.stop();
  });

  it('says when the token expired without a fresh one', async () => {
    let n = 0;
    const h = harness(() => (n++ === 0 ? goodReply() : refusal('InternalError', 'internal error')));
    h.bootstrapper.onRegistered();
    await until(() => h.events.some((e) => e.type === 'token-written'));
    await h.clock.advance(3600_000);
    expect(h.logger.lines.join('\n')).toContain('the mesh identity expired at');
    h.bootstrapper.stop();
  });
});

describe('sidecar files', () => {
  it('quotes cluster.env so a value is never run by the shell that sources it', async () => {
    const file = join(root, 'cluster.env');
    const hostile = "x'; touch pwned; echo '";
    await writeFile(file, renderClusterEnv({ ISTIO_META_NETWORK: hostile, POD_NAMESPACE: 'shop' }));
    const out = execFileSync(
      '/bin/sh',
      ['-c', 'set -a; . "$0"; printf %s "$ISTIO_META_NETWORK"', file],
      {
        cwd: root,
        encoding: 'utf8',
      },
    );
    expect(out).toBe(hostile);
    await expect(stat(join(root, 'pwned'))).rejects.toThrow();
  });

  it('keeps every other hosts line and replaces only its own', () => {
    const before = `127.0.0.1 localhost\n10.0.0.9 old ${HOSTS_MARKER}\n::1 ip6-localhost\n`;
    const after = mergeHosts(before, [
      { address: '10.1.1.1', hostnames: ['istiod.istio-system.svc'] },
    ]);
    expect(after).toBe(
      `127.0.0.1 localhost\n::1 ip6-localhost\n10.1.1.1 istiod.istio-system.svc ${HOSTS_MARKER}\n`,
    );
    expect(mergeHosts(after, [])).toBe('127.0.0.1 localhost\n::1 ip6-localhost\n');
  });

  it('leaves a file with the same content and mode untouched, and rewrites one whose mode drifted', async () => {
    const file = join(root, 'a', 'b', 'mesh');
    expect(await writeSafely(file, { content: 'x: 1\n', mode: 0o644 })).toBe('written');
    const { mtimeMs } = await stat(file);
    expect(await writeSafely(file, { content: 'x: 1\n', mode: 0o644 })).toBe('unchanged');
    expect((await stat(file)).mtimeMs).toBe(mtimeMs);
    expect(await writeSafely(file, { content: 'x: 1\n', mode: 0o600 })).toBe('written');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, 'utf8')).toBe('x: 1\n');
  });

  it('redacts the token from --debug traces', () => {
    const text = JSON.stringify(goodReply());
    const shown = redactSidecarToken(text);
    expect(shown).not.toContain('aaa.bbb.ccc');
    expect(shown).toContain('<redacted>');
    expect(redactSidecarToken('{"action":"pong"}')).toBe('{"action":"pong"}');
  });

  it('warns an agent that writes the system’s Istio files as root that it needs no root', () => {
    const config = { ...SIDECAR_DEFAULTS, enabled: true };
    expect(rootWarning(config, 0)).toContain('it needs no root');
    expect(rootWarning(config, 999)).toBeUndefined();
    expect(rootWarning({ ...config, prefix: root }, 0)).toBeUndefined();
    expect(rootWarning({ ...config, enabled: false }, 0)).toBeUndefined();
  });
});
