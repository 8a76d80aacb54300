import { formatDuration } from '../domain/duration.ts';
import { QuotaExceededError } from '../domain/errors.ts';
import { DEFAULT_MESSAGE_BUDGET, type MessageBudgetPolicy } from '../domain/message-budget.ts';
import { countRefusal, logger } from '../observability.ts';
import { errorReply } from './replies.ts';
import type { WebSocketResult } from './websocket-events.ts';

/** Closes a connection from the server side (`DELETE @connections/{id}`). */
export type ConnectionCloser = (connectionId: string) => Promise<unknown>;

/**
 * The answer to a message over its connection's budget (lib/domain/message-budget.ts), without
 * a request to the table: the first one of the window is counted (`Refused`, reason
 * `MessageRateExceeded`), logged, and closes the connection when a closer is given, so the
 * flood stops at API Gateway and its sender meets its namespace's connect rate quota to come
 * back; every later one of the window is answered alone (a flood must not flood the logs).
 */
export async function overBudget(
  connectionId: string,
  verdict: 'exceeded' | 'over',
  close: ConnectionCloser | undefined,
  options: {
    policy?: Pick<MessageBudgetPolicy, 'messages' | 'windowMs'>;
    /** The action the reply names (the `sidecar` route's replies do). */
    action?: string;
  } = {},
): Promise<WebSocketResult> {
  const { messages, windowMs } = options.policy ?? DEFAULT_MESSAGE_BUDGET;
  const refusal = new QuotaExceededError(
    `this connection sent more than ${messages} messages in ${formatDuration(windowMs)} (an agent sends a few a minute): it is closed; reconnect and send at an agent's pace`,
    QuotaExceededError.MESSAGE_RATE,
  );
  if (verdict === 'exceeded') {
    countRefusal(refusal.code);
    logger.warn('connection over its message budget', {
      messages,
      windowMs,
      closing: close !== undefined,
    });
    if (close) {
      await close(connectionId).catch((error: unknown) => {
        logger.warn('could not close a connection over its message budget', {
          cause: error instanceof Error ? error.message : String(error),
        });
      });
    }
  }
  const reply = errorReply(refusal.code, refusal.message);
  return {
    statusCode: 200,
    body: JSON.stringify(options.action ? { action: options.action, ...reply } : reply),
  };
}
