import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { WebSocket } from 'ws';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, entryName, startAgentTestbed } from '../fixtures/agent-testbed.ts';

/**
 * A tenant with a join token of its own namespace floods `ping`, which API Gateway answers
 * itself and no function's message budget sees, until the stage's `ping` route throttles every
 * agent's pings. The local gateway throttles routes as the stage does (here at 5/s, so the
 * flood takes every token); another namespace's agent, whose pings now get API Gateway's
 * `Too Many Requests` instead of a pong, must keep its connection instead of dropping it and
 * reconnecting, as every agent of the fleet would at once.
 */
let bed: AgentTestbed;
let attacker: WebSocket | undefined;
let flood: NodeJS.Timeout | undefined;

beforeAll(async () => {
  bed = await startAgentTestbed({ routeThrottle: { rateLimit: 5, burstLimit: 5 } });
});
afterAll(async () => {
  clearInterval(flood);
  attacker?.terminate();
  await bed?.close();
});

async function evilConnection(): Promise<{ socket: WebSocket; throttled: () => number }> {
  const client = createDocumentClient({
    region: bed.runtime.region,
    endpoint: bed.runtime.dynamoDbEndpoint,
  });
  await bed.registry.applyGroup({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'flood', namespace: 'evil' },
    spec: { template: { ports: { http: 8080 } } },
  });
  const { token, stored } = createJoinToken({
    namespace: 'evil',
    ttlMs: 3_600_000,
    now: Date.now(),
  });
  await new DynamoDbTokenStore(client, bed.runtime.tableName).putToken(stored);
  client.destroy();
  const socket = new WebSocket(`${bed.runtime.url}?group=flood&namespace=evil&ip=10.9.0.1`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  let throttled = 0;
  socket.on('message', (data) => {
    if (String(data).includes('Too Many Requests')) throttled += 1;
  });
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return { socket, throttled: () => throttled };
}

describe('a ping flood from one namespace', () => {
  it("throttles the shared ping route, and another namespace's agent keeps its connection", async () => {
    await bed.applyGroup('web');
    const victim = await bed.agent({
      group: 'web',
      ips: ['10.0.0.7'],
      timingOverrides: { pingIntervalMs: 400, ackTimeoutMs: 300 },
    });
    await waitFor(() => victim.running.supervisor.entryName, 'the victim registered');
    const connectsBefore = victim.events.filter((e) => e.type === 'connected').length;

    const evil = await evilConnection();
    attacker = evil.socket;
    flood = setInterval(() => {
      for (let i = 0; i < 20; i += 1) evil.socket.send('{"action":"ping"}');
    }, 50);
    await waitFor(() => evil.throttled() > 50, 'the flood throttled', 10_000);

    // Three of the victim's pings answered by the gateway's throttle, not by a pong.
    const kept = () =>
      victim.logs.filter((l) => l.includes('connection answered since; keeping it'));
    await waitFor(() => kept().length >= 3, "the victim's pings throttled three times", 15_000);
    expect(kept().some((l) => l.includes('Too Many Requests'))).toBe(true);
    expect(victim.logs.some((l) => l.includes('dropping the connection'))).toBe(false);
    expect(victim.events.filter((e) => e.type === 'connected').length).toBe(connectsBefore);
    expect((await bed.entry(entryName('web', '10.0.0.7')))?.connected).toBe(true);
  }, 40_000);
});
