import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  type GatewayHandlers,
  type GatewayLimits,
  type LocalGateway,
  startGateway,
} from '../../infra/local/gateway.ts';
import type { AuthorizerEvent, WebSocketEvent } from '../../infra/local/gateway-events.ts';
import { eventually, openClient, refusedUpgrade } from '../fixtures/websocket-client.ts';

/**
 * The local gateway against real `ws` clients, with stub handlers that record what they
 * receive: the events must look like API Gateway's, and the limits must act like its limits.
 */

interface Recorded {
  authorize: AuthorizerEvent[];
  connect: WebSocketEvent[];
  disconnect: WebSocketEvent[];
  messages: WebSocketEvent[];
}

const allow = (event: AuthorizerEvent) => ({
  principalId: 'token:abc',
  policyDocument: {
    Version: '2012-10-17',
    Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: event.methodArn }],
  },
  context: { namespace: 'shop', serviceAccount: 'vm', expiresAt: 1234 },
});

let gateway: LocalGateway | undefined;

afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

async function start(
  overrides: Partial<GatewayHandlers> = {},
  limits: Partial<GatewayLimits> = {},
): Promise<{ gateway: LocalGateway; recorded: Recorded }> {
  const recorded: Recorded = { authorize: [], connect: [], disconnect: [], messages: [] };
  const echo = (route: string) => async (event: WebSocketEvent) => {
    recorded.messages.push(event);
    return { statusCode: 200, body: JSON.stringify({ route, body: event.body }) };
  };
  gateway = await startGateway({
    port: 0,
    identitySource: ['route.request.header.Authorization'],
    limits,
    handlers: {
      authorize: async (event: AuthorizerEvent) => {
        recorded.authorize.push(event);
        return allow(event);
      },
      connect: async (event: WebSocketEvent) => {
        recorded.connect.push(event);
        return { statusCode: 200 };
      },
      disconnect: async (event: WebSocketEvent) => {
        recorded.disconnect.push(event);
        return { statusCode: 200 };
      },
      routes: { health: echo('health'), describe: echo('describe') },
      default: echo('$default'),
      mocks: { ping: JSON.stringify({ action: 'pong' }) },
      ...overrides,
    },
  });
  return { gateway, recorded };
}

const AUTH = { Authorization: 'Bearer secret-token' };
const QUERY = '/?group=web&namespace=shop&ip=10.0.0.1&ip=fd00::1&label=a=1&label=b=2';

describe('upgrade and $connect', () => {
  it('passes the authorizer a REQUEST event with the methodArn, headers and repeated query parameters', async () => {
    const { gateway, recorded } = await start();
    const client = await openClient(gateway.url + QUERY, AUTH);
    const event = recorded.authorize[0];
    expect(event?.type).toBe('REQUEST');
    expect(event?.methodArn).toBe(
      'arn:aws:execute-api:us-east-1:000000000000:local/local/$connect',
    );
    expect(event?.headers.Authorization).toBe('Bearer secret-token');
    expect(event?.multiValueQueryStringParameters.ip).toEqual(['10.0.0.1', 'fd00::1']);
    expect(event?.requestContext.eventType).toBe('CONNECT');
    await client.close();
  });

  it('hands $connect an API Gateway-shaped event carrying the authorizer context', async () => {
    const { gateway, recorded } = await start();
    const before = Date.now();
    const client = await openClient(gateway.url + QUERY, { ...AUTH, 'User-Agent': 'agent/1' });
    const event = recorded.connect[0] as WebSocketEvent;
    const rc = event.requestContext;
    expect(rc).toMatchObject({
      routeKey: '$connect',
      eventType: 'CONNECT',
      messageId: null,
      messageDirection: 'IN',
      stage: 'local',
      apiId: 'local',
      identity: { sourceIp: '127.0.0.1', userAgent: 'agent/1' },
      authorizer: {
        principalId: 'token:abc',
        namespace: 'shop',
        serviceAccount: 'vm',
        expiresAt: '1234',
      },
    });
    expect(rc.connectionId).toMatch(/^[A-Za-z0-9_-]{15}=$/);
    expect(rc.connectedAt).toBeGreaterThanOrEqual(before);
    expect(rc.requestTimeEpoch).toBeGreaterThanOrEqual(rc.connectedAt);
    expect(rc.requestTime).toMatch(/^\d\d\/\w{3}\/\d{4}:\d\d:\d\d:\d\d \+0000$/);
    expect(rc.requestId).not.toBe(rc.connectionId);
    expect(event.headers?.Authorization).toBe('Bearer secret-token');
    expect(event.headers?.['X-Forwarded-For']).toBe('127.0.0.1');
    expect(event.headers).not.toHaveProperty('Upgrade');
    expect(event.queryStringParameters).toMatchObject({
      group: 'web',
      namespace: 'shop',
      ip: 'fd00::1',
    });
    expect(event.multiValueQueryStringParameters?.label).toEqual(['a=1', 'b=2']);
    expect(event.isBase64Encoded).toBe(false);
    expect(event.body).toBeUndefined();
    await client.close();
  });

  it('refuses with 401 when the Authorization header is missing, without running the authorizer', async () => {
    const { gateway, recorded } = await start();
    const refusal = await refusedUpgrade(gateway.url + QUERY);
    expect(refusal).toEqual({ statusCode: 401, body: '{"message":"Unauthorized"}' });
    expect(recorded.authorize).toHaveLength(0);
    expect(recorded.connect).toHaveLength(0);
  });

  it('refuses with 401 when the authorizer throws Unauthorized', async () => {
    const { gateway, recorded } = await start({
      authorize: async () => {
        throw new Error('Unauthorized');
      },
    });
    expect((await refusedUpgrade(gateway.url + QUERY, AUTH)).statusCode).toBe(401);
    expect(recorded.connect).toHaveLength(0);
  });

  it('refuses with 403 when the authorizer policy denies', async () => {
    const { gateway, recorded } = await start({
      authorize: async (event: AuthorizerEvent) => ({
        principalId: 'token:abc',
        policyDocument: {
          Statement: [{ Action: 'execute-api:Invoke', Effect: 'Deny', Resource: event.methodArn }],
        },
      }),
    });
    expect(await refusedUpgrade(gateway.url + QUERY, AUTH)).toEqual({
      statusCode: 403,
      body: '{"message":"Forbidden"}',
    });
    expect(recorded.connect).toHaveLength(0);
  });

  it('refuses with 500 when the authorizer fails otherwise or returns an object in its context', async () => {
    const { gateway } = await start({
      authorize: async (event: AuthorizerEvent) => ({
        ...allow(event),
        context: { nested: { no: 1 } },
      }),
    });
    expect((await refusedUpgrade(gateway.url + QUERY, AUTH)).statusCode).toBe(500);
  });

  it('refuses the upgrade with the status code and body $connect returned', async () => {
    const body = JSON.stringify({
      ok: false,
      error: { code: 'Conflict', message: 'entry web-10.0.0.1 was made by hand' },
    });
    const { gateway, recorded } = await start({ connect: async () => ({ statusCode: 409, body }) });
    expect(await refusedUpgrade(gateway.url + QUERY, AUTH)).toEqual({ statusCode: 409, body });
    // A refused connect never opened, so there is nothing to disconnect.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(recorded.disconnect).toHaveLength(0);
  });

  it('answers 502 when $connect throws', async () => {
    const { gateway } = await start({
      connect: async () => {
        throw new Error('boom');
      },
    });
    expect((await refusedUpgrade(gateway.url + QUERY, AUTH)).statusCode).toBe(502);
  });
});

describe('messages', () => {
  it('routes by the JSON body action and sends the route response back', async () => {
    const { gateway, recorded } = await start();
    const client = await openClient(gateway.url + QUERY, AUTH);
    const reply = await client.request({ action: 'health', healthy: true });
    expect(reply).toEqual({ route: 'health', body: '{"action":"health","healthy":true}' });
    const rc = recorded.messages[0]?.requestContext;
    expect(rc).toMatchObject({
      routeKey: 'health',
      eventType: 'MESSAGE',
      connectionId: recorded.connect[0]?.requestContext.connectionId,
    });
    expect(rc?.messageId).toEqual(expect.any(String));
    expect(rc?.authorizer).toMatchObject({ principalId: 'token:abc', namespace: 'shop' });
    expect(recorded.messages[0]?.isBase64Encoded).toBe(false);
    await client.close();
  });

  it('routes an unknown action and a non-JSON message to $default', async () => {
    const { gateway } = await start();
    const client = await openClient(gateway.url + QUERY, AUTH);
    expect((await client.request({ action: 'reboot' })).route).toBe('$default');
    client.socket.send('not json');
    expect(JSON.parse(await client.next()).route).toBe('$default');
    expect((await client.request(['health'])).route).toBe('$default');
    await client.close();
  });

  it('answers ping with pong without running a handler', async () => {
    const { gateway, recorded } = await start();
    const client = await openClient(gateway.url + QUERY, AUTH);
    expect(await client.request({ action: 'ping' })).toEqual({ action: 'pong' });
    expect(recorded.messages).toHaveLength(0);
    await client.close();
  });

  it('tells the client when the route integration fails, as API Gateway does', async () => {
    const { gateway } = await start({
      routes: {
        health: async () => {
          throw new Error('boom');
        },
      },
    });
    const client = await openClient(gateway.url + QUERY, AUTH);
    const reply = await client.request({ action: 'health', healthy: true });
    expect(reply).toMatchObject({
      message: 'Internal server error',
      connectionId: expect.any(String),
    });
    await client.close();
  });

  it('closes with 1009 on a frame over 32 KB without running a handler', async () => {
    const { gateway, recorded } = await start();
    const client = await openClient(gateway.url + QUERY, AUTH);
    client.socket.send(JSON.stringify({ action: 'health', pad: 'x'.repeat(33 * 1024) }));
    expect((await client.closed).code).toBe(1009);
    expect(recorded.messages).toHaveLength(0);
    await eventually(() => recorded.disconnect.length === 1);
    expect(recorded.disconnect[0]?.requestContext.disconnectStatusCode).toBe(1009);
  });

  it('accepts a 40 KB message sent as frames of at most 32 KB', async () => {
    const { gateway } = await start();
    const client = await openClient(gateway.url + QUERY, AUTH);
    const text = Buffer.from(JSON.stringify({ action: 'describe', pad: 'x'.repeat(40 * 1024) }));
    client.socket.send(text.subarray(0, 30 * 1024), { binary: false, fin: false });
    client.socket.send(text.subarray(30 * 1024), { binary: false, fin: true });
    expect(JSON.parse(await client.next()).route).toBe('describe');
    await client.close();
  });
});

describe('message size', () => {
  it('closes with 1009 on a message over 128 KB even when every frame is within 32 KB', async () => {
    const { gateway, recorded } = await start();
    const client = await openClient(gateway.url + QUERY, AUTH);
    const text = Buffer.from(JSON.stringify({ action: 'health', pad: 'x'.repeat(130 * 1024) }));
    const frame = 32 * 1024;
    for (let offset = 0; offset < text.length; offset += frame) {
      const fin = offset + frame >= text.length;
      client.socket.send(text.subarray(offset, offset + frame), { binary: false, fin });
    }
    expect((await client.closed).code).toBe(1009);
    await eventually(() => recorded.disconnect.length === 1);
    expect(recorded.messages).toHaveLength(0);
  });
});

describe('connection limits and $disconnect', () => {
  it('invokes $disconnect once when the client closes, timed when it ended', async () => {
    const { gateway, recorded } = await start();
    const client = await openClient(gateway.url + QUERY, AUTH);
    const closedAt = Date.now();
    await client.close(1000, 'bye');
    const event = await eventually(() => recorded.disconnect[0]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(recorded.disconnect).toHaveLength(1);
    expect(event.requestContext).toMatchObject({
      routeKey: '$disconnect',
      eventType: 'DISCONNECT',
      disconnectStatusCode: 1000,
      disconnectReason: 'bye',
      connectionId: recorded.connect[0]?.requestContext.connectionId,
      authorizer: { principalId: 'token:abc' },
    });
    expect(event.requestContext.requestTimeEpoch).toBeGreaterThanOrEqual(closedAt);
    expect(event.body).toBeUndefined();
  });

  it('invokes $disconnect when the client drops without a close frame', async () => {
    const { gateway, recorded } = await start();
    const client = await openClient(gateway.url + QUERY, AUTH);
    client.socket.terminate();
    const event = await eventually(() => recorded.disconnect[0]);
    expect(event.requestContext.disconnectStatusCode).toBe(1006);
    expect(gateway.connectionIds()).toEqual([]);
  });

  it('closes a connection idle for the idle timeout and invokes $disconnect once', async () => {
    const { gateway, recorded } = await start({}, { idleTimeoutMs: 200 });
    const client = await openClient(gateway.url + QUERY, AUTH);
    const opened = Date.now();
    expect((await client.closed).code).toBe(1001);
    expect(Date.now() - opened).toBeGreaterThanOrEqual(150);
    await eventually(() => recorded.disconnect.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(recorded.disconnect).toHaveLength(1);
  });

  it('counts client messages as activity, not messages sent to the client', async () => {
    const { gateway, recorded } = await start({}, { idleTimeoutMs: 400 });
    const client = await openClient(gateway.url + QUERY, AUTH);
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(await client.request({ action: 'ping' })).toEqual({ action: 'pong' });
    }
    // 600 ms in, past the idle timeout, still open because the client kept talking.
    expect(client.socket.readyState).toBe(WebSocket.OPEN);
    const id = recorded.connect[0]?.requestContext.connectionId as string;
    const post = () =>
      fetch(`${gateway.managementUrl}/@connections/${encodeURIComponent(id)}`, {
        method: 'POST',
        body: 'hi',
      });
    await post();
    expect((await client.closed).code).toBe(1001);
  });

  it('closes a connection at the maximum connection age even while it is active', async () => {
    const { gateway, recorded } = await start(
      {},
      { maxConnectionAgeMs: 300, idleTimeoutMs: 10_000 },
    );
    const client = await openClient(gateway.url + QUERY, AUTH);
    const timer = setInterval(
      () => client.socket.readyState === WebSocket.OPEN && client.socket.send('{"action":"ping"}'),
      50,
    );
    const { code } = await client.closed;
    clearInterval(timer);
    expect(code).toBe(1001);
    await eventually(() => recorded.disconnect.length === 1);
    const event = recorded.disconnect[0] as WebSocketEvent;
    expect(
      event.requestContext.requestTimeEpoch - event.requestContext.connectedAt,
    ).toBeGreaterThanOrEqual(300);
  });

  it('invokes $disconnect for every open connection when the gateway closes', async () => {
    const { gateway, recorded } = await start();
    const clients = [
      await openClient(gateway.url + QUERY, AUTH),
      await openClient(gateway.url + QUERY, AUTH),
    ];
    await gateway.close();
    expect(recorded.disconnect).toHaveLength(2);
    for (const client of clients) expect((await client.closed).code).toBe(1001);
  });
});

describe('@connections', () => {
  async function connected() {
    const started = await start();
    const client = await openClient(started.gateway.url + QUERY, {
      ...AUTH,
      'User-Agent': 'agent/1',
    });
    const id = started.recorded.connect[0]?.requestContext.connectionId as string;
    const url = `${started.gateway.managementUrl}/@connections/${encodeURIComponent(id)}`;
    return { ...started, client, id, url };
  }

  it('POST sends the body to the client', async () => {
    const { client, url } = await connected();
    const response = await fetch(url, { method: 'POST', body: '{"hello":"agent"}' });
    expect(response.status).toBe(200);
    expect(await client.next()).toBe('{"hello":"agent"}');
    await client.close();
  });

  it('GET describes the connection', async () => {
    const { client, url, recorded } = await connected();
    await client.request({ action: 'ping' });
    const response = await fetch(url);
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({
      ConnectedAt: new Date(
        recorded.connect[0]?.requestContext.connectedAt as number,
      ).toISOString(),
      Identity: { SourceIp: '127.0.0.1', UserAgent: 'agent/1' },
      LastActiveAt: expect.any(String),
    });
    expect(Date.parse(body.LastActiveAt as string)).toBeGreaterThanOrEqual(
      Date.parse(body.ConnectedAt as string),
    );
    await client.close();
  });

  it('DELETE closes the connection, invokes $disconnect, and the id is gone afterwards', async () => {
    const { client, url, recorded, gateway } = await connected();
    expect((await fetch(url, { method: 'DELETE' })).status).toBe(204);
    // API Gateway's DeleteConnection closes with 1000, as a normal close.
    expect((await client.closed).code).toBe(1000);
    await eventually(() => recorded.disconnect.length === 1);
    expect(gateway.connectionIds()).toEqual([]);
    expect((await fetch(url)).status).toBe(410);
  });

  it('answers 410 Gone for an unknown connection id', async () => {
    const { gateway } = await start();
    for (const method of ['GET', 'POST', 'DELETE']) {
      const response = await fetch(`${gateway.managementUrl}/@connections/nope=`, {
        method,
        body: method === 'POST' ? 'x' : undefined,
      });
      expect(response.status).toBe(410);
      expect(response.headers.get('x-amzn-errortype')).toBe('GoneException');
    }
  });

  it('accepts the stage prefix an ApiGatewayManagementApi client adds', async () => {
    const { client, id, gateway } = await connected();
    const response = await fetch(
      `${gateway.managementUrl}/local/@connections/${encodeURIComponent(id)}`,
    );
    expect(response.status).toBe(200);
    await client.close();
  });
});
