import { formatRef } from '../lib/domain/model.ts';
import { AuthSetupError } from './auth.ts';
import { REFUSAL_STATUSES } from './backoff.ts';
import { NotRegistrarError, RefusedError, type Reply } from './connection.ts';
import type { Described, OpenFailure } from './supervisor-state.ts';

/**
 * What the supervisor's shell hears, as the machine's events read it: an upgrade's error
 * classified, a `describe` reply reduced to what the supervisor reads.
 */

/** Says what to do about a refusal (see `SupervisorOptions.refusalHint`). */
export type RefusalHint = (
  status: number,
  reasonGiven: boolean,
  message: string,
) => string | undefined;

/** Turns an upgrade's error into what the machine decides on. */
export function openFailure(error: unknown, refusalHint: RefusalHint | undefined): OpenFailure {
  if (error instanceof NotRegistrarError)
    return {
      kind: 'not-registrar',
      message: error.message,
      status: error.status,
      contentType: error.contentType,
    };
  if (error instanceof RefusedError && REFUSAL_STATUSES.has(error.status)) {
    // The registrar's own refusal (it names a code) already says what to do; API Gateway's
    // bare `Forbidden`/`Unauthorized` forwards no reason, so the agent adds the likely ones.
    const hint = refusalHint?.(error.status, error.code !== undefined, error.message);
    const reason = `refused (${error.status}${error.code ? ` ${error.code}` : ''}): ${error.message}`;
    return {
      kind: 'refused',
      reason: hint ? `${reason}; ${hint}` : reason,
      status: error.status,
      missingGroup: error.status === 404,
    };
  }
  if (error instanceof AuthSetupError)
    return { kind: 'refused', reason: error.message, status: undefined, missingGroup: false };
  return { kind: 'failed', description: describeError(error) };
}

/** The parts of a `describe` reply the supervisor reads. */
export function describedReply(reply: Reply): Described {
  const metadata = (reply.entry as { metadata?: { namespace?: string; name?: string } } | undefined)
    ?.metadata;
  return {
    name:
      metadata?.name && metadata.namespace
        ? formatRef({ namespace: metadata.namespace, name: metadata.name })
        : '?',
    connectionId: typeof reply.connectionId === 'string' ? reply.connectionId : undefined,
    maintenance: reply.maintenance,
    probe: reply.probe,
    heartbeat: reply.heartbeat,
  };
}

/** Node's `connect ECONNREFUSED 127.0.0.1:8080` already names its code: said once. */
export function describeError(error: unknown): string {
  if (error instanceof RefusedError) return `HTTP ${error.status}: ${error.message}`;
  const code = (error as NodeJS.ErrnoException).code;
  const message = (error as Error).message;
  return code && !message.includes(code) ? `${code} ${message}` : message;
}
