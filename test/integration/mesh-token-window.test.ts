import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../fixtures/agent-targets.ts';
import {
  ISTIOD_ADDRESS,
  type SidecarTestbed,
  startSidecarTestbed,
} from '../fixtures/sidecar-testbed.ts';
import { eventually } from '../fixtures/websocket-client.ts';

/**
 * The window a revoked join token leaves open (docs/security.md, "Revocation and mesh
 * tokens"): a mesh token already handed out cannot be called back, so the exposure after
 * `token revoke` is what is left of its lifetime, and no more: the revoke cuts the agent's
 * connection, its reconnect is refused, and nothing mints it another token. With the shorter
 * lifetime option (REGISTRAR_MESH_TOKEN_LIFETIME, `meshTokenLifetime`), that is 10 minutes.
 * The real agent against the local runtime and the kube-apiserver STAND-IN's TokenRequest.
 */
let testbed: SidecarTestbed | undefined;
afterEach(async () => {
  await testbed?.close();
  testbed = undefined;
});

const TEN_MINUTES_S = 600;

describe('revocation and mesh tokens', () => {
  // The sidecar bootstrap, a revoke through the CLI and a refused reconnect: slow on a loaded
  // machine, so a longer bound than the suite's 30 s.
  it('mints tokens of the configured lifetime, and none after the join token is revoked', {
    timeout: 60_000,
  }, async () => {
    testbed = await startSidecarTestbed({
      runtime: {
        functionEnv: {
          REGISTRAR_GROUP_CACHE_TTL: '0s',
          REGISTRAR_MESH_ISTIOD_ADDRESS: ISTIOD_ADDRESS,
          REGISTRAR_MESH_TOKEN_LIFETIME: '10m',
        },
      },
    });
    const bed = testbed;
    const revoked = await bed.newToken();
    const agent = await bed.sidecarAgent({ auth: { mode: 'token', token: revoked.token } });
    await eventually(() => agent.sidecarEvents.find((e) => e.type === 'token-written'), 15_000);

    const [issued] = bed.api.issuedTokens();
    expect(bed.api.issuedTokens()).toHaveLength(1);
    expect(issued?.expirationSeconds).toBe(TEN_MINUTES_S);
    // The window: at most the lifetime from the moment it was handed out.
    expect(Date.parse(issued?.expiresAt ?? '') - Date.now()).toBeLessThanOrEqual(
      TEN_MINUTES_S * 1000,
    );

    const revoke = await bed.bed.cli([
      'token',
      'revoke',
      revoked.id,
      '--management-endpoint',
      bed.bed.runtime.managementUrl,
      '--settle',
      '0',
    ]);
    expect(revoke.code).toBe(0);
    expect(revoke.stdout).toContain('closed 1 connection');
    // The agent is cut off, and its reconnects are refused: it cannot ask for a new token.
    await waitFor(
      () => agent.logs.some((line) => (JSON.parse(line) as { status?: number }).status === 401),
      'the reconnect refused 401',
      20_000,
    );
    expect(bed.api.issuedTokens()).toHaveLength(1);
    await agent.stop();
  });
});
