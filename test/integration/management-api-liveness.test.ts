import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ApiGatewayManagementApiClient,
  GetConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handleManagementRequest } from '../../infra/local/management-api.ts';
import { SignedHttpClient } from '../../lib/aws/signed-http.ts';
import { closeConnections } from '../../lib/gateway/close-connections.ts';
import { connectionPath } from '../../lib/gateway/management-api-client.ts';
import { activityOf, ManagementApiLiveness } from '../../lib/gateway/management-api-liveness.ts';
import { wireCapture } from '../fixtures/sdk-wire.ts';

/**
 * The liveness check without the SDK client (lib/gateway/management-api-liveness.ts): against
 * the local gateway's own management API handler (what the local runtime serves, with a stage
 * prefix as on AWS), against a stand-in answering as API Gateway refuses, and its request
 * beside the SDK client's GetConnection for the same connection.
 */
let server: Server;
let base: string;
const open = new Set(['abc123=', 'def456=']);
let refusals: { status: number; body: string; type: string }[] = [];
let requests: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const refusal = refusals.shift();
    if (refusal) {
      res.writeHead(refusal.status, { 'x-amzn-ErrorType': `${refusal.type}:http://internal` });
      res.end(refusal.body);
      return;
    }
    handleManagementRequest(
      {
        describe: (id) =>
          open.has(id)
            ? {
                connectedAt: Date.parse('2026-01-01T00:00:00Z'),
                lastActiveAt: Date.parse('2026-01-01T00:05:00.250Z'),
                sourceIp: '10.0.0.1',
                userAgent: undefined,
              }
            : undefined,
        post: () => false,
        remove: (id) => open.delete(id),
      },
      req,
      res,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('the liveness check over @connections', () => {
  it('says alive for an open connection and gone for a closed one, under the stage path', async () => {
    requests = [];
    const liveness = new ManagementApiLiveness({
      endpoint: `${base}/prod`,
      region: 'us-east-1',
      local: true,
    });
    const answer = await liveness.check('abc123=');
    expect(answer).toEqual({
      alive: {
        connectedAt: Date.parse('2026-01-01T00:00:00Z'),
        lastActiveAt: Date.parse('2026-01-01T00:05:00.250Z'),
        answeredAt: expect.any(Number),
      },
    });
    // The answer's time is the gateway's Date header (whole seconds).
    expect((answer as { alive: { answeredAt: number } }).alive.answeredAt % 1000).toBe(0);
    expect(await liveness.check('zzz999=')).toBe('gone');
    expect(requests).toEqual([
      'GET /prod/@connections/abc123%3D',
      'GET /prod/@connections/zzz999%3D',
    ]);
  });

  it('names a refusal, retries a throttle once, and says unknown when nothing answers', async () => {
    const liveness = new ManagementApiLiveness({
      endpoint: base,
      region: 'us-east-1',
      local: true,
    });
    refusals = [
      { status: 403, type: 'AccessDeniedException', body: '{"message":"not authorized"}' },
    ];
    expect(await liveness.check('abc123=')).toEqual({
      unknown: 'AccessDeniedException: not authorized',
    });
    requests = [];
    refusals = [{ status: 429, type: 'TooManyRequestsException', body: '{"message":"slow"}' }];
    expect(await liveness.check('abc123=')).toMatchObject({ alive: expect.any(Object) });
    expect(requests).toHaveLength(2);
    const nowhere = new ManagementApiLiveness({
      endpoint: 'http://127.0.0.1:1',
      region: 'us-east-1',
      local: true,
    });
    expect(await nowhere.check('abc123=')).toMatchObject({
      unknown: expect.stringMatching(/ECONNREFUSED/),
    });
  });

  it("reads the endpoint at each check (the local runtime's port is known once it listens)", async () => {
    let url = 'http://127.0.0.1:1';
    const liveness = new ManagementApiLiveness({
      endpoint: () => url,
      region: 'us-east-1',
      local: true,
    });
    expect(await liveness.check('abc123=')).toMatchObject({ unknown: expect.any(String) });
    url = base;
    expect(await liveness.check('abc123=')).toMatchObject({ alive: expect.any(Object) });
  });
});

describe("reading GetConnection's activity", () => {
  it('reads the JSON names AWS sends (ISO or epoch seconds) and the Date header', () => {
    expect(
      activityOf({
        text: '{"connectedAt":"2026-01-01T00:00:00.000Z","identity":{"sourceIp":"10.0.0.1"},"lastActiveAt":1767225610}',
        headers: { date: 'Thu, 01 Jan 2026 00:01:00 GMT' },
      }),
    ).toEqual({
      connectedAt: Date.parse('2026-01-01T00:00:00Z'),
      lastActiveAt: 1_767_225_610_000,
      answeredAt: Date.parse('2026-01-01T00:01:00Z'),
    });
  });

  it('knows nothing of activity from a body without times: never silent', () => {
    expect(activityOf({ text: 'not json', headers: {} })).toEqual({});
    expect(activityOf({ text: '{"lastActiveAt":"yesterday"}', headers: {} })).toEqual({});
  });
});

describe('closing connections (the rollout function, DELETE @connections)', () => {
  it('counts a closed and an already gone connection as closed, and a refusal as failed', async () => {
    open.add('close-me=');
    requests = [];
    const options = { endpoint: `${base}/prod`, region: 'us-east-1' };
    expect(await closeConnections(['close-me=', 'never-open='], options)).toEqual({
      closed: 2,
      failed: 0,
    });
    expect(open.has('close-me=')).toBe(false);
    expect(requests.sort()).toEqual([
      'DELETE /prod/@connections/close-me%3D',
      'DELETE /prod/@connections/never-open%3D',
    ]);
    refusals = [{ status: 403, type: 'AccessDeniedException', body: '{"message":"no"}' }];
    expect(await closeConnections(['abc123='], options)).toEqual({ closed: 0, failed: 1 });
    expect(open.has('abc123=')).toBe(true);
    expect(
      await closeConnections(['abc123='], { endpoint: 'http://127.0.0.1:1', region: 'us-east-1' }),
    ).toEqual({ closed: 0, failed: 1 });
  });
});

describe('the request on the wire', () => {
  it("is the SDK client's GetConnection: method, path, host, date and signing scope", async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-11-25T12:00:00Z'));
    try {
      const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
      const endpoint = 'https://abc.execute-api.eu-west-1.amazonaws.com/prod';
      // Stops at the wire: the request the SDK would send, answered as an open connection.
      const wire = wireCapture();
      const client = new ApiGatewayManagementApiClient({
        region: 'eu-west-1',
        endpoint,
        credentials,
        requestHandler: wire.requestHandler,
      });
      await client.send(new GetConnectionCommand({ ConnectionId: 'abc123=' }));
      const ours = await new SignedHttpClient({
        endpoint,
        region: 'eu-west-1',
        service: 'execute-api',
        credentials: async () => credentials,
      }).sign('GET', connectionPath('abc123='));
      const theirs = wire.sent();
      const header = (headers: Record<string, string>, name: string) =>
        Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
      expect(ours.method).toBe(theirs.method);
      expect(ours.path).toBe(theirs.path);
      for (const name of ['host', 'x-amz-date']) {
        expect([name, header(ours.headers, name)]).toEqual([name, header(theirs.headers, name)]);
      }
      const scope = (headers: Record<string, string>) =>
        /Credential=([^,]+)/.exec(header(headers, 'authorization') ?? '')?.[1];
      expect(scope(ours.headers)).toBe('AKIDEXAMPLE/20261125/eu-west-1/execute-api/aws4_request');
      expect(scope(ours.headers)).toBe(scope(theirs.headers));
    } finally {
      vi.useRealTimers();
    }
  });
});
