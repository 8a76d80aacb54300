import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '../../agent/agent.ts';
import { systemClock } from '../../agent/clock.ts';
import { type AgentConfig, DEFAULT_TIMING } from '../../agent/config.ts';
import { NotRegistrarError, openLink, RefusedError } from '../../agent/connection.ts';
import { memoryLogger } from '../../agent/logger.ts';
import type { AgentEvent } from '../../agent/supervisor.ts';
import { waitFor } from '../fixtures/agent-targets.ts';

/**
 * An agent whose --url points at something that is not the registrar: a real HTTP server
 * answering what web servers answer (a page, a redirect, an HTML error page), and one
 * answering as a registrar refuses (JSON), to show the difference.
 */
const PAGE = `<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>${'<p>filler</p>'.repeat(200)}</body></html>`;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

let server: Server;
let base: string;
let answer: Answer;
let upgrades = 0;

beforeAll(async () => {
  server = createServer((_request, response) => {
    response.writeHead(answer.status, answer.headers).end(answer.body);
  });
  // The agent's upgrade request reaches 'upgrade', not 'request': answer it the same way.
  server.on('upgrade', (_request, socket) => {
    upgrades += 1;
    const head = [
      `HTTP/1.1 ${answer.status} Whatever`,
      ...Object.entries(answer.headers).map(([name, value]) => `${name}: ${value}`),
      `Content-Length: ${Buffer.byteLength(answer.body)}`,
      'Connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${answer.body}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const options = { clock: systemClock, connectTimeoutMs: 2_000, replyTimeoutMs: 300 };
const html = (status: number): Answer => ({
  status,
  headers: { 'Content-Type': 'text/html; charset=utf-8' },
  body: PAGE,
});

describe('an upgrade answered by something that is not a registrar', () => {
  it.each([
    ['a web page', html(200), 200, 'text/html'],
    ['an HTML 404 page', html(404), 404, 'text/html'],
    ['an HTML 502 page of a proxy', html(502), 502, 'text/html'],
    [
      'a redirect',
      { status: 301, headers: { Location: 'https://x.example/' }, body: '' },
      301,
      undefined,
    ],
    [
      'a 403 with a plain-text body',
      { status: 403, headers: {}, body: 'Forbidden by proxy' },
      403,
      undefined,
    ],
  ] as const)(
    'is a NotRegistrarError for %s, without the page',
    async (_what, given, status, type) => {
      answer = given;
      const error = await openLink(`${base}/prod?group=web`, {}, options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotRegistrarError);
      expect(error).toMatchObject({ status, contentType: type });
      expect((error as Error).message).toBe(
        `this URL answered HTTP ${status} with ${type ?? 'no content type'}; it is not a registrar WebSocket endpoint`,
      );
    },
  );

  it.each([
    [
      'API Gateway',
      {
        status: 401,
        headers: { 'Content-Type': 'application/json' },
        body: '{"message":"Unauthorized"}',
      },
    ],
    [
      'a $connect refusal without a body',
      { status: 404, headers: { 'Content-Type': 'application/json' }, body: '' },
    ],
  ] as const)('is still a refusal when %s answers JSON', async (_what, given) => {
    answer = given;
    const error = await openLink(`${base}/prod`, {}, options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RefusedError);
    expect(error).toMatchObject({ status: given.status });
  });
});

describe('agent pointed at a web server', () => {
  it('says once what the URL answered, never logs the page, and waits as after a refusal', async () => {
    answer = html(200);
    upgrades = 0;
    const logger = memoryLogger('json');
    const events: (AgentEvent & { at: number })[] = [];
    const config: AgentConfig = {
      url: `${base}/prod`,
      group: 'web',
      namespace: 'shop',
      labels: {},
      auth: { mode: 'token', token: 't' },
      ips: ['10.0.0.7'],
      imds: { enabled: false, url: 'http://127.0.0.1:1', timeoutMs: 100 },
      logFormat: 'json',
      debug: false,
      // Refusal-class waits of 200-400 ms here; a failure-class wait would be under 100 ms.
      timing: {
        ...DEFAULT_TIMING,
        backoffBaseMs: 50,
        backoffCapMs: 100,
        refusalBackoffMs: 400,
        refusalBackoffCapMs: 400,
      },
    };
    const agent = await startAgent(config, { logger, onEvent: (event) => events.push(event) });
    try {
      await waitFor(() => upgrades >= 3, 'three attempts', 10_000);
      // The answer changes: said again, once.
      answer = html(503);
      const before = upgrades;
      await waitFor(() => upgrades >= before + 2, 'two more attempts', 10_000);
    } finally {
      await agent.stop();
    }
    const lines = logger.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const said = lines.filter((line) => String(line.msg).includes('it is not a registrar'));
    expect(said.map((line) => line.status)).toEqual([200, 503]);
    expect(said[0]).toMatchObject({ level: 'error', status: 200, contentType: 'text/html' });
    expect(String(said[0]?.msg)).toMatch(
      /^this URL answered HTTP 200 with text\/html; it is not a registrar WebSocket endpoint; check --url/,
    );
    expect(logger.lines.join('\n')).not.toMatch(/nginx|<html|filler/i);
    const retries = events.filter((e) => e.type === 'retry-scheduled');
    expect(retries.length).toBeGreaterThanOrEqual(4);
    expect(retries.every((r) => r.refused && r.delayMs >= 200)).toBe(true);
  });
});
