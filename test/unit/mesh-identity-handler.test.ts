import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// The debug switches an operator flips: Powertools then logs every event it is allowed to.
vi.hoisted(() => {
  process.env.POWERTOOLS_LOGGER_LOG_EVENT = 'true';
  process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
});

import { createMeshIdentityHandler, type MeshIdentityDeps } from '../../functions/mesh-identity.ts';
import type { MeshIssuer } from '../../lib/mesh-identity/mesh-issuer.ts';
import { readMeshSettings } from '../../lib/mesh-identity/mesh-settings.ts';
import type { WebSocketMessageEvent } from '../../lib/protocol/websocket-events.ts';
import { captureProcessOutput } from '../fixtures/captured-output.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { entryRecord } from '../fixtures/projection-records.ts';

/**
 * The mesh function's handler with the registry and the cluster replaced at their ports (the
 * real ones run in test/integration/sidecar-*.test.ts): what it answers, and that the token it
 * hands out never reaches a log line, even with event logging and DEBUG on.
 */
const NOW = Date.UTC(2026, 2, 1, 12, 0, 0);
const SECRET = 'eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLWJvZHk.signature-of-the-secret';

let output: string[] = [];
beforeEach(() => {
  output = captureProcessOutput();
});
afterEach(() => {
  vi.restoreAllMocks();
});

function deps(issuer: MeshIssuer | undefined): MeshIdentityDeps {
  const record = entryRecord('vm-1');
  return {
    config: { authMode: 'token', instanceAttestation: 'optional' },
    store: {
      getConnection: async () => undefined,
      getEntry: async () => record,
      getGroup: async () => ({
        group: {
          apiVersion: 'networking.istio.io/v1',
          kind: 'WorkloadGroup',
          metadata: { name: 'vm', namespace: 'shop' },
          spec: { metadata: { labels: { app: 'cart' } }, template: { ports: { http: 8080 } } },
        },
        generation: 1,
      }),
    },
    tokens: {
      getToken: async () => ({
        id: 't1',
        secretHash: 'x',
        namespace: 'shop',
        createdAt: NOW - 1,
        expiresAt: NOW + 60_000,
      }),
    },
    policies: undefined,
    issuer,
    settings: readMeshSettings({}),
    now: () => NOW,
  };
}

const issuer: MeshIssuer = {
  mintToken: async () => ({ token: SECRET, expiresAt: new Date(NOW + 3_600_000) }),
  rootCert: async () => '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
};

function event(body: string): WebSocketMessageEvent {
  return {
    requestContext: {
      routeKey: 'sidecar',
      connectionId: 'conn-1',
      requestTimeEpoch: NOW,
      authorizer: { tokenId: 't1', entryNamespace: 'shop', entryName: 'vm-1' },
    },
    body,
  };
}

describe('the mesh identity handler', () => {
  it('answers with the token and never logs it', async () => {
    const handler = createMeshIdentityHandler(deps(issuer));
    const result = await handler(event('{"action":"sidecar"}'), lambdaContext());
    const reply = JSON.parse(result.body ?? '{}');
    expect(reply).toMatchObject({ action: 'sidecar', ok: true, serviceAccount: 'cart' });
    expect(reply.token).toMatchObject({ value: SECRET, expiresInSeconds: 3600 });
    const logged = output.join('');
    expect(logged).toContain('mesh identity issued');
    expect(logged).not.toContain('c2VjcmV0LXRva2VuLWJvZHk');
  });

  it('names its action in refusals, so the agent matches them to its request', async () => {
    const handler = createMeshIdentityHandler(deps(undefined));
    const result = await handler(event('{"action":"sidecar"}'), lambdaContext());
    expect(JSON.parse(result.body ?? '{}')).toMatchObject({
      action: 'sidecar',
      ok: false,
      error: { code: 'SidecarUnavailable' },
    });
  });
});
