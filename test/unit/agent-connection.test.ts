import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../agent/clock.ts';
import { type AgentLink, openLink, RefusedError, RequestError } from '../../agent/connection.ts';
import { type StandInGateway, startStandInGateway } from '../fixtures/agent-stand-in-gateway.ts';

/**
 * One connection against a stand-in registrar speaking protocol v1 on a real WebSocket (see
 * the fixture); the real gateway is covered by test/integration/agent-*.test.ts.
 */
let gateway: StandInGateway;
const options = { clock: systemClock, connectTimeoutMs: 2_000, replyTimeoutMs: 300 };
const auth = { Authorization: 'Bearer test-token' };

beforeAll(async () => {
  gateway = await startStandInGateway({ groups: { 'shop/web': { tcpSocket: { port: 80 } } } });
});
afterAll(() => gateway.close());

const connect = (
  query = '?group=web&namespace=shop&ip=10.0.0.1',
  headers: Record<string, string> = auth,
) => openLink(`${gateway.url}${query}`, headers, options);

describe('agent connection', () => {
  let link: AgentLink;
  afterAll(() => link?.close());

  it('sends the bearer token on the upgrade', async () => {
    link = await connect();
    expect(gateway.upgrades.at(-1)?.headers.authorization).toBe('Bearer test-token');
  });

  it('matches replies to requests by action: describe, health and ping', async () => {
    expect(await link.request('describe')).toMatchObject({
      action: 'describe',
      ok: true,
      probe: { tcpSocket: { port: 80 } },
    });
    expect(await link.request('health', { healthy: true })).toEqual({ action: 'health', ok: true });
    expect(await link.request('ping')).toEqual({ action: 'pong' });
  });

  it('traces every message sent and received (--debug), and no credential', async () => {
    const traced: string[] = [];
    const traceLink = await openLink(`${gateway.url}?group=web&namespace=shop&ip=10.0.0.1`, auth, {
      ...options,
      trace: (direction, text) => traced.push(`${direction} ${text}`),
    });
    try {
      await traceLink.request('health', { healthy: true });
      await traceLink.request('ping');
    } finally {
      await traceLink.close();
    }
    expect(traced).toEqual([
      'sent {"action":"health","healthy":true}',
      'received {"action":"health","ok":true}',
      'sent {"action":"ping"}',
      'received {"action":"pong"}',
    ]);
    expect(traced.join('\n')).not.toContain('test-token');
  });

  it('fails a request whose reply does not come within the timeout', async () => {
    gateway.dropHealthReplies = 1;
    await expect(link.request('health', { healthy: false })).rejects.toMatchObject({
      kind: 'timeout',
    });
  });

  it("records API Gateway's own answer to a throttled ping, and settles no request with it", async () => {
    const sent = systemClock.now();
    gateway.pingAnswer = 'throttled';
    try {
      await expect(link.request('ping')).rejects.toMatchObject({ kind: 'timeout' });
    } finally {
      gateway.pingAnswer = 'pong';
    }
    expect(link.lastGatewayMessage?.text).toBe('Too Many Requests');
    expect(link.lastGatewayMessage?.at).toBeGreaterThanOrEqual(sent);
    expect(link.lastReceivedAt).toBeGreaterThanOrEqual(sent);
    // The connection still serves requests.
    expect(await link.request('ping')).toEqual({ action: 'pong' });
  });

  it('turns an HTTP refusal into a RefusedError with the server reason', async () => {
    const refused = await connect(undefined, { Authorization: 'Bearer wrong' }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(RefusedError);
    expect(refused).toMatchObject({
      status: 401,
      code: 'Unauthenticated',
      message: 'unknown join token; create one with registrar token create',
    });
  });

  it('reports an unknown group as a 404 with the name', async () => {
    await expect(connect('?group=nope&namespace=shop&ip=10.0.0.1')).rejects.toMatchObject({
      status: 404,
      message: 'cannot find WorkloadGroup shop/nope',
    });
  });

  it('rejects pending requests when the server drops the connection', async () => {
    const doomed = await connect('?group=web&namespace=shop&ip=10.0.0.2');
    gateway.dropHealthReplies = 1;
    const pending = doomed.request('health', { healthy: true });
    gateway.dropAll();
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestError);
    expect((error as RequestError).kind).toBe('closed');
    expect(doomed.closed).toBe(true);
  });

  it('closes with 1000 so the server sees a clean disconnect', async () => {
    const clean = await connect('?group=web&namespace=shop&ip=10.0.0.3');
    const live = gateway.live();
    await clean.close();
    expect(clean.closed).toBe(true);
    expect(gateway.live()).toBeLessThan(live);
  });
});
