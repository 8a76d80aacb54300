import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// The common debug switch an operator flips: Powertools then logs every event it is allowed to.
// Read when lib/observability.ts creates the Logger, so before any import below.
vi.hoisted(() => {
  process.env.POWERTOOLS_LOGGER_LOG_EVENT = 'true';
  process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
});

import { createAuthorizeHandler } from '../../functions/authorize.ts';
import { createConnectHandler } from '../../functions/connect.ts';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import { readConfig } from '../../lib/config.ts';
import type { StoredToken } from '../../lib/domain/stored-token.ts';
import { logger } from '../../lib/observability.ts';
import type { AuthorizeDependencies } from '../../lib/wiring/authorize.ts';
import type { ConnectDependencies } from '../../lib/wiring/connect.ts';
import { captureProcessOutput } from '../fixtures/captured-output.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';

const NOW = Date.UTC(2026, 2, 1, 12, 0, 0);
const { token, stored } = createJoinToken({ namespace: 'shop', ttlMs: 3_600_000, now: NOW });

/** Every line the functions write while a test runs. */
let output: string[] = [];
beforeEach(() => {
  output = captureProcessOutput();
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** What the authorizer and `$connect` are given: the tests call only these two. */
function deps(): AuthorizeDependencies & ConnectDependencies {
  const tokens = new Map<string, StoredToken>([[stored.id, stored]]);
  const failing = () => Promise.reject(new Error('table unreachable'));
  return {
    ...NO_CAPABILITIES,
    config: readConfig({ REGISTRAR_TABLE: 'registry' }),
    // Connect never gets as far as the store in these tests: the event is logged (or not) first.
    store: new Proxy({}, { get: () => failing }) as ConnectDependencies['store'],
    // The authorizer reads a token; nothing here writes or lists one.
    tokens: { getToken: async (id) => tokens.get(id) },
    now: () => NOW,
  };
}

function connectEvent() {
  return {
    type: 'REQUEST' as const,
    methodArn: 'arn:aws:execute-api:eu-west-1:123456789012:api1/v1/$connect',
    headers: { Authorization: `Bearer ${token}` },
    multiValueHeaders: { Authorization: [`Bearer ${token}`] },
    queryStringParameters: { group: 'web', namespace: 'shop', ip: '10.0.0.7' },
    multiValueQueryStringParameters: { group: ['web'], namespace: ['shop'], ip: ['10.0.0.7'] },
    requestContext: {
      routeKey: '$connect',
      eventType: 'CONNECT' as const,
      connectionId: 'conn-1',
      connectedAt: NOW,
      requestTimeEpoch: NOW,
    },
  };
}

const secretOf = (joinToken: string) => joinToken.split('.')[2] ?? joinToken;

describe('secrets in logs with POWERTOOLS_LOGGER_LOG_EVENT=true', () => {
  it('would log the bearer token if a function let Powertools log its event', () => {
    // The control: proves the switch is on and that the capture sees an event log line.
    logger.logEventIfEnabled(connectEvent());
    expect(output.join('')).toContain(secretOf(token));
  });

  it('the authorizer logs its decision but never the token', async () => {
    const authorize = createAuthorizeHandler(deps());
    const result = await authorize(connectEvent() as never, lambdaContext('authorize'));
    expect(result.policyDocument.Statement[0]?.Effect).toBe('Allow');
    const logged = output.join('');
    expect(logged).toContain('join token accepted');
    expect(logged).not.toContain(secretOf(token));
  });

  it('the authorizer refusing a bad token does not log what was presented', async () => {
    const authorize = createAuthorizeHandler(deps());
    const wrong = `wrt.${stored.id}.${'x'.repeat(43)}`;
    const event = {
      ...connectEvent(),
      headers: { Authorization: `Bearer ${wrong}` },
      multiValueHeaders: { Authorization: [`Bearer ${wrong}`] },
    };
    await expect(authorize(event as never, lambdaContext('authorize'))).rejects.toThrow(
      'Unauthorized',
    );
    const logged = output.join('');
    expect(logged).toContain('request refused');
    expect(logged).not.toContain('x'.repeat(43));
  });

  it('connect never logs the Authorization header, even when it fails', async () => {
    const connect = createConnectHandler(deps());
    const event = {
      ...connectEvent(),
      requestContext: {
        ...connectEvent().requestContext,
        authorizer: { principalId: `token:${stored.id}`, namespace: 'shop', tokenId: stored.id },
      },
    };
    const result = await connect(event as never, lambdaContext('connect'));
    expect(result.statusCode).toBeGreaterThanOrEqual(400);
    const logged = output.join('');
    expect(logged.length).toBeGreaterThan(0);
    expect(logged).not.toContain(secretOf(token));
  });
});
