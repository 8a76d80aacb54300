import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createMessageHandler } from '../../functions/message.ts';
import { dependenciesFromEnv } from '../../lib/dependencies.ts';
import { DEFAULT_MESSAGE_BUDGET } from '../../lib/domain/message-budget.ts';
import { messageDependencies } from '../../lib/wiring/message.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';

/**
 * The message function as Lambda wires it (lib/dependencies.ts, from its environment), its
 * connection closer the SDK's management API client: pointed at a plain-HTTP stand-in for API
 * Gateway's `@connections` (the real endpoint needs AWS), which records what it was asked.
 * The messages are pings, which the function answers without the table.
 */
let server: Server;
const asked: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('the deployed message function over a connection’s budget', () => {
  // The local runtime's wiring, and the message function's own (lib/wiring/message.ts).
  it.each([
    ['dependenciesFromEnv', dependenciesFromEnv],
    ['messageDependencies', messageDependencies],
  ] as const)(
    '%s: closes that connection once through the management API, and answers the rest 429',
    async (_name, wiring) => {
      asked.length = 0;
      const { port } = server.address() as AddressInfo;
      const deps = wiring({
        REGISTRAR_TABLE: 'unused',
        REGISTRAR_DYNAMODB_ENDPOINT: 'http://127.0.0.1:1',
        REGISTRAR_CONNECTIONS_URL: `http://127.0.0.1:${port}/v1`,
      });
      expect(deps.closeConnection).toBeDefined();
      const handler = createMessageHandler(deps);
      const codes: string[] = [];
      const total = DEFAULT_MESSAGE_BUDGET.messages + 5;
      for (let i = 0; i < total; i++) {
        const result = await handler(
          {
            requestContext: {
              routeKey: '$default',
              connectionId: 'flood=',
              requestTimeEpoch: Date.now(),
            } as never,
            body: JSON.stringify({ action: 'ping' }),
          },
          lambdaContext('registrar-message'),
        );
        const reply = JSON.parse(result.body ?? '{}') as { error?: { code: string } };
        codes.push(reply.error?.code ?? 'ok');
      }
      expect(codes.filter((code) => code === 'ok')).toHaveLength(DEFAULT_MESSAGE_BUDGET.messages);
      expect(codes.slice(DEFAULT_MESSAGE_BUDGET.messages)).toEqual(
        Array(5).fill('MessageRateExceeded'),
      );
      expect(asked).toEqual(['DELETE /v1/@connections/flood%3D']);
    },
  );
});
