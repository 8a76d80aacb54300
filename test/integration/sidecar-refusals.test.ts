import { afterEach, describe, expect, it } from 'vitest';
import { SIDECAR_MESSAGE_BUDGET } from '../../lib/domain/message-budget.ts';
import { NAMESPACE } from '../fixtures/agent-testbed.ts';
import { type SidecarTestbed, startSidecarTestbed } from '../fixtures/sidecar-testbed.ts';
import { openClient, type TestClient } from '../fixtures/websocket-client.ts';

// Attackers and stale callers ask for a mesh identity over real WebSockets, against the local
// runtime and the kube-apiserver STAND-IN (no real API server runs here). None gets a token:
// the stand-in records every TokenRequest it answered.

let testbed: SidecarTestbed | undefined;
const clients: TestClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close().catch(() => undefined)));
  await testbed?.close();
  testbed = undefined;
});

async function connect(bed: SidecarTestbed, token: string, ip: string): Promise<TestClient> {
  const url = `${bed.bed.runtime.url}?group=web&namespace=${NAMESPACE}&ip=${ip}`;
  const client = await openClient(url, { Authorization: `Bearer ${token}` });
  clients.push(client);
  return client;
}

describe('sidecar refusals', () => {
  it('answers a held entry with its own service account’s token', async () => {
    testbed = await startSidecarTestbed();
    const client = await connect(testbed, testbed.token, '10.0.0.21');
    const reply = await client.request({ action: 'sidecar' });
    expect(reply).toMatchObject({ action: 'sidecar', ok: true, serviceAccount: 'web' });
    expect(testbed.api.issuedTokens().map((t) => `${t.namespace}/${t.serviceAccount}`)).toEqual([
      'shop/web',
    ]);
  });

  it('refuses a request that names another service account, and mints nothing', async () => {
    testbed = await startSidecarTestbed();
    testbed.api.addServiceAccount(NAMESPACE, 'admin');
    const client = await connect(testbed, testbed.token, '10.0.0.22');
    for (const field of [
      { serviceAccount: 'admin' },
      { namespace: 'kube-system' },
      { audience: 'kubernetes' },
    ]) {
      const reply = await client.request({ action: 'sidecar', ...field });
      expect(reply).toMatchObject({ ok: false, error: { code: 'InvalidMessage' } });
      expect(String((reply.error as { message: string }).message)).toContain(
        `unexpected field '${Object.keys(field)[0]}'`,
      );
    }
    expect(testbed.api.issuedTokens()).toEqual([]);
  });

  it('refuses a connection that no longer holds its entry', async () => {
    testbed = await startSidecarTestbed();
    const client = await connect(testbed, testbed.token, '10.0.0.23');
    // The operator deleted the entry; the connection lives on until it is closed.
    await testbed.bed.registry.deleteEntry({ namespace: NAMESPACE, name: 'web-10.0.0.23' });
    const reply = await client.request({ action: 'sidecar' });
    expect(reply).toMatchObject({ action: 'sidecar', ok: false, error: { code: 'NotRegistered' } });
    expect(testbed.api.issuedTokens()).toEqual([]);
  });

  it('refuses a caller whose join token was revoked after it connected', async () => {
    testbed = await startSidecarTestbed();
    const revoked = await testbed.newToken();
    const client = await connect(testbed, revoked.token, '10.0.0.24');
    expect(await client.request({ action: 'sidecar' })).toMatchObject({ ok: true });
    await testbed.tokens.revokeToken(revoked.id, Date.now());
    const reply = await client.request({ action: 'sidecar' });
    expect(reply).toMatchObject({ action: 'sidecar', ok: false, error: { code: 'Forbidden' } });
    expect(String((reply.error as { message: string }).message)).toContain('was revoked');
    expect(testbed.api.issuedTokens()).toHaveLength(1);
  });

  it('refuses an entry whose group names no service account', async () => {
    testbed = await startSidecarTestbed();
    await testbed.bed.registry.applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'anon', namespace: NAMESPACE },
      spec: { template: { ports: { http: 8080 } } },
    });
    const plain = testbed.bed.token; // a namespace token without a service account
    const url = `${testbed.bed.runtime.url}?group=anon&namespace=${NAMESPACE}&ip=10.0.0.25`;
    const client = await openClient(url, { Authorization: `Bearer ${plain}` });
    clients.push(client);
    const reply = await client.request({ action: 'sidecar' });
    expect(reply).toMatchObject({ ok: false, error: { code: 'NoServiceAccount' } });
    expect(testbed.api.issuedTokens()).toEqual([]);
  });

  it('says the bootstrap is unavailable when no cluster is configured', async () => {
    testbed = await startSidecarTestbed({ cluster: false });
    const client = await connect(testbed, testbed.token, '10.0.0.26');
    const reply = await client.request({ action: 'sidecar' });
    expect(reply).toMatchObject({ ok: false, error: { code: 'SidecarUnavailable' } });
    expect(String((reply.error as { message: string }).message)).toContain("'sidecar'");
  });

  it('closes a connection that asks more than its budget, minting at most the budget', async () => {
    testbed = await startSidecarTestbed();
    const client = await connect(testbed, testbed.token, '10.0.0.26');
    const replies: { ok?: boolean; action?: string; error?: { code: string } }[] = [];
    client.socket.on('message', (data) => replies.push(JSON.parse(data.toString())));
    const asks = SIDECAR_MESSAGE_BUDGET.messages * 3;
    for (let i = 0; i < asks; i++) client.socket.send(JSON.stringify({ action: 'sidecar' }));
    expect((await client.closed).code).toBe(1000);
    expect(replies).toContainEqual(
      expect.objectContaining({
        action: 'sidecar',
        ok: false,
        error: expect.objectContaining({ code: 'MessageRateExceeded' }),
      }),
    );
    // The cluster saw at most the budget: the flood stopped before the Kubernetes API.
    expect(testbed.api.issuedTokens().length).toBeLessThanOrEqual(SIDECAR_MESSAGE_BUDGET.messages);
  });
});
