import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { inInvocationScope } from '../../infra/local/invocation-scope.ts';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('inInvocationScope', () => {
  it("keeps each concurrent invocation's appended keys its own, as on Lambda", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = new Logger({ serviceName: 'scope-test', logLevel: 'INFO' });
    const capture = (line: string) => lines.push(JSON.parse(line));
    (logger as unknown as { console: unknown }).console = {
      info: capture,
      warn: capture,
      error: capture,
      debug: capture,
      log: capture,
      trace: capture,
    };
    // Two $connects in flight at once: the first appends its key, waits on the table, and
    // logs after the second has appended its own and finished (resetting keys).
    const first = inInvocationScope('r1', async () => {
      logger.appendKeys({ connectionId: 'first' });
      await pause(30);
      logger.info('workload connected');
    });
    const second = inInvocationScope('r2', async () => {
      await pause(5);
      logger.appendKeys({ connectionId: 'second' });
      logger.info('workload connected');
      logger.resetKeys();
    });
    await Promise.all([first, second]);
    logger.info('outside any invocation');
    expect(lines.map((line) => [line.message, line.connectionId])).toEqual([
      ['workload connected', 'second'],
      ['workload connected', 'first'],
      ['outside any invocation', undefined],
    ]);
  });
});
