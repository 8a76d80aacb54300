import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { RELEASE } from '../../lib/release.ts';
import { type AgentTestbed, NAMESPACE, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { openClient, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * The protocol only grows (docs/operations.md, "Version skew"): what a newer agent adds
 * reaches this registrar as unknown fields, actions and parameters, each answered as such.
 * Real WebSocket clients against the local runtime play an agent of a later release.
 */
let bed: AgentTestbed;
let client: TestClient;
const IP = '10.0.7.1';

beforeAll(async () => {
  bed = await startAgentTestbed();
  await bed.applyGroup('web');
  // `topology=` is a parameter of no release: ignored, the VM registers as without it.
  client = await openClient(
    `${bed.runtime.url}?group=web&namespace=${NAMESPACE}&ip=${IP}&topology=rack-7&agentVersion=0.3.0`,
    { Authorization: `Bearer ${bed.token}` },
  );
});
afterAll(async () => {
  await client?.close();
  await bed?.close();
});

describe('what a newer agent adds', () => {
  it('registers a connect with a parameter the registrar does not know, as without it', async () => {
    const record = await bed.registry.getEntry({ namespace: NAMESPACE, name: `web-${IP}` });
    expect(record?.entry.spec).toMatchObject({ address: IP, ports: { http: 8080 } });
    expect(JSON.stringify(record)).not.toContain('rack-7');
    expect(record?.agentVersion).toBe('0.3.0');
  });

  it('lands a health report with an unknown field and names the field in the ack', async () => {
    const reply = await client.request({ action: 'health', healthy: false, detail: { code: 7 } });
    expect(reply).toEqual({ action: 'health', ok: true, ignoredFields: ['detail'] });
    expect((await bed.entry(`web-${IP}`))?.healthy).toBe('False');
  });

  it('acks a health report without unknown fields exactly as protocol v1 did', async () => {
    expect(await client.request({ action: 'health', healthy: true })).toEqual({
      action: 'health',
      ok: true,
    });
  });

  it("names the registrar's version and the ignored fields in the describe reply", async () => {
    const reply = await client.request({ action: 'describe', verbose: true });
    expect(reply).toMatchObject({
      action: 'describe',
      ok: true,
      registrarVersion: RELEASE,
      ignoredFields: ['verbose'],
    });
  });

  it('answers an unknown action with UnknownAction, naming it, and changes nothing', async () => {
    const before = await bed.registry.getEntry({ namespace: NAMESPACE, name: `web-${IP}` });
    // An action of no release (a later one would add its own, never this one).
    const reply = await client.request({ action: 'teleport', to: 'mars' });
    expect(reply).toMatchObject({ ok: false, error: { code: 'UnknownAction' } });
    expect((reply.error as { message: string }).message).toMatch(
      /^unknown action 'teleport'; send one of health, describe, ping, drain\b/,
    );
    const after = await bed.registry.getEntry({ namespace: NAMESPACE, name: `web-${IP}` });
    expect(after?.revision).toBe(before?.revision);
  });

  it('refuses a drain with a field it would ignore, naming the field, and does not drain', async () => {
    const reply = await client.request({ action: 'drain', delaySeconds: 30 });
    expect(reply).toEqual({
      ok: false,
      error: {
        code: 'InvalidMessage',
        message: `invalid drain message: unexpected field 'delaySeconds'; send {"action":"drain"}`,
      },
    });
    const record = await bed.registry.getEntry({ namespace: NAMESPACE, name: `web-${IP}` });
    expect(record?.health?.reason).toBeUndefined();
  });
});
