import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { systemClock } from '../../agent/clock.ts';
import { openLink, RequestError } from '../../agent/connection.ts';

/**
 * `drain` on a real WebSocket, against a server that answers as a registrar predating it:
 * `{"ok":false,"error":{"code":"UnknownAction",...}}` (no action in the reply), and leaves a
 * ping unanswered meanwhile, as a slow gateway might.
 */
let server: WebSocketServer;
let url: string;

beforeAll(async () => {
  server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  server.on('connection', (socket) => {
    socket.on('message', (data) => {
      const { action } = JSON.parse(String(data)) as { action: string };
      if (action === 'ping') return; // never answered
      socket.send(
        JSON.stringify({
          ok: false,
          error: {
            code: 'UnknownAction',
            message: `unknown action '${action}'; send one of health, describe, ping as {"action":"<name>",...}`,
          },
        }),
      );
    });
  });
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('drain on a connection', () => {
  it('matches an UnknownAction reply to the drain it quotes, not to an older outstanding ping', async () => {
    const link = await openLink(
      url,
      {},
      {
        clock: systemClock,
        connectTimeoutMs: 2_000,
        replyTimeoutMs: 1_000,
      },
    );
    try {
      const ping = link.request('ping').catch((error: unknown) => error);
      const drain = await link.request('drain').catch((error: unknown) => error);
      expect(drain).toBeInstanceOf(RequestError);
      expect(drain).toMatchObject({ kind: 'error', code: 'UnknownAction' });
      // The ping is still waiting for its own reply, and times out on its own.
      expect(await ping).toMatchObject({ kind: 'timeout' });
    } finally {
      await link.close();
    }
  });
});
