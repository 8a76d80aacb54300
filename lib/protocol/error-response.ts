import type { Logger } from '@aws-lambda-powertools/logger';
import type { MiddlewareObj } from '@middy/core';
import { RegistrarError } from '../domain/errors.ts';
import { countFault, countRefusal } from '../observability.ts';
import { type ErrorReply, errorReply } from './replies.ts';
import type { WebSocketResult } from './websocket-events.ts';

export const INTERNAL_ERROR_CODE = 'InternalError';

/** What a refusal looks like on the wire, decided here and nowhere else. */
export interface ErrorOutcome {
  statusCode: number;
  reply: ErrorReply;
  /** A RegistrarError: a refusal the caller can fix. Otherwise a fault of ours. */
  expected: boolean;
}

/**
 * Maps an error to its status and reply. Refusals (the RegistrarError family) carry their
 * own status and message; anything else is a 500 that reveals nothing: its message may hold
 * table names, SDK details or stack traces.
 */
export function errorOutcome(error: unknown): ErrorOutcome {
  if (error instanceof RegistrarError) {
    return {
      statusCode: error.statusCode,
      reply: errorReply(error.code, error.message),
      expected: true,
    };
  }
  return {
    statusCode: 500,
    reply: errorReply(INTERNAL_ERROR_CODE, 'internal error; retry later'),
    expected: false,
  };
}

/**
 * Counts an error as what it is: a refusal (the caller's mistake, `Refused` by code) or a
 * fault (ours or a dependency's, `Faults` by error name). Only faults page: anyone on the
 * internet can produce refusals.
 */
export function countOutcome(error: unknown, outcome: ErrorOutcome): void {
  if (outcome.expected) countRefusal(outcome.reply.error.code);
  else countFault(faultReason(error));
}

/** The error's name (`TimeoutError`, `ProvisionedThroughputExceededException`) as a metric dimension. */
export function faultReason(error: unknown): string {
  const name = error instanceof Error ? error.name : undefined;
  // A dimension value is shown on dashboards and keys a metric: keep it short and plain.
  return name !== undefined && /^[A-Za-z][A-Za-z0-9.]{0,63}$/.test(name) ? name : 'UnknownError';
}

/** Logs an error the way every function does: refusals as warnings, faults with their cause. */
export function logError(logger: Logger, error: unknown, outcome: ErrorOutcome): void {
  if (outcome.expected) {
    logger.warn('request refused', {
      code: outcome.reply.error.code,
      statusCode: outcome.statusCode,
      reason: outcome.reply.error.message,
    });
  } else {
    logger.error('unexpected error', error as Error);
  }
}

export interface ErrorsToResponsesOptions {
  /**
   * Message routes answer every message with a reply the agent reads (`ok: false` for a
   * refusal), so refusals travel as 200 route responses; `$connect` refuses the upgrade with
   * the error's own status. Faults are always 500.
   */
  refusalsAsReplies?: boolean;
}

/** middy error handler for `$connect`, `$disconnect` and message routes. */
export function errorsToResponses(
  logger: Logger,
  options: ErrorsToResponsesOptions = {},
): MiddlewareObj<unknown, WebSocketResult> {
  return {
    onError: (request) => {
      const outcome = errorOutcome(request.error);
      logError(logger, request.error, outcome);
      countOutcome(request.error, outcome);
      const statusCode = options.refusalsAsReplies && outcome.expected ? 200 : outcome.statusCode;
      // Setting the response (not returning it) lets the metrics and logger middlewares
      // registered before this one still flush and reset in their own onError.
      request.response = { statusCode, body: JSON.stringify(outcome.reply) };
    },
  };
}

/**
 * middy error handler for the authorizer and the sweeper: logs and counts, then lets the
 * error propagate, because there the failure itself is the answer (API Gateway's 401/500,
 * a failed scheduled invocation that the sweeper alarm watches).
 */
export function errorsLoggedAndRethrown(
  logger: Logger,
  /** What to throw instead, e.g. the authorizer's `Error('Unauthorized')` for a 401. */
  replace?: (error: unknown, outcome: ErrorOutcome) => Error | undefined,
): MiddlewareObj {
  return {
    onError: (request) => {
      const outcome = errorOutcome(request.error);
      logError(logger, request.error, outcome);
      countOutcome(request.error, outcome);
      const replacement = replace?.(request.error, outcome);
      if (replacement) request.error = replacement;
    },
  };
}
