import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '../../agent/agent.ts';
import { DEFAULT_TIMING } from '../../agent/config.ts';
import { memoryLogger } from '../../agent/logger.ts';
import { refusalHint } from '../../agent/refusal-hints.ts';
import type { AgentEvent } from '../../agent/supervisor.ts';
import { AGENT_VERSION } from '../../agent/version.ts';
import { waitFor } from '../fixtures/agent-targets.ts';

const auth = { mode: 'token' as const, token: 't', tokenSource: 'REGISTRAR_AGENT_TOKEN' };

describe('a refusal of the agent version (426)', () => {
  it("names this agent's version and the skew policy when the registrar's reason is missing", () => {
    expect(refusalHint(426, { auth, namespace: 'shop' })).toBe(
      `this agent is registrar-agent ${AGENT_VERSION}, outside the versions the registrar accepts (its minor release and the two before it); install the agent of the registrar's release (docs/operations.md, version skew)`,
    );
  });

  it("adds nothing to the registrar's own reason, which names both versions", () => {
    expect(refusalHint(426, { auth, namespace: 'shop' }, true)).toBeUndefined();
  });
});

/**
 * API Gateway refuses a `$connect` with the integration's status and no body: a bare server
 * answering the upgrade that way plays it (no registrar could run here to do it).
 */
describe('an agent refused 426 without a body, as API Gateway answers', () => {
  const server = createServer();
  let url = '';
  beforeAll(async () => {
    server.on('upgrade', (_request, socket) => {
      socket.end('HTTP/1.1 426 Upgrade Required\r\nContent-Length: 0\r\n\r\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('logs the status, its own version and the policy, and waits as after any refusal', async () => {
    const logger = memoryLogger('json');
    const events: AgentEvent[] = [];
    const agent = await startAgent(
      {
        url,
        group: 'web',
        namespace: 'shop',
        labels: {},
        auth,
        ips: ['10.0.0.7'],
        imds: { enabled: false, url: 'http://127.0.0.1:1', timeoutMs: 100 },
        logFormat: 'json',
        debug: false,
        timing: DEFAULT_TIMING,
      },
      { logger, onEvent: (event) => events.push(event) },
    );
    try {
      const line = await waitFor(
        () => logger.lines.find((text) => text.includes('refused (426')),
        'the refusal',
      );
      const logged = JSON.parse(line) as { level: string; msg: string; status: number };
      expect(logged.level).toBe('error');
      expect(logged.status).toBe(426);
      expect(logged.msg).toContain(
        `refused (426): Upgrade Required; this agent is registrar-agent ${AGENT_VERSION}`,
      );
      const retry = events.find((event) => event.type === 'retry-scheduled');
      // The refusal backoff (30 s at first, jittered down to half), not the 1 s failure one.
      expect(retry).toMatchObject({ refused: true });
      expect((retry as { delayMs: number }).delayMs).toBeGreaterThanOrEqual(15_000);
    } finally {
      await agent.stop();
    }
  });
});
