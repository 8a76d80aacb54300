import type { Context } from 'aws-lambda';
import type { FunctionConcurrency } from './function-concurrency.ts';
import { lambdaContext } from './gateway-events.ts';
import { inInvocationScope } from './invocation-scope.ts';

/**
 * A Lambda handler as the gateway calls it. The event parameter is `never` so any handler,
 * whatever event type it declares, can be plugged in; the gateway builds the event.
 */
export type LambdaFunction = (event: never, context: Context) => unknown;

/** A handler, optionally with the function name its Lambda context should carry. */
export type RouteTarget = LambdaFunction | { functionName: string; handler: LambdaFunction };

/** The integration did not answer within API Gateway's integration timeout (29 s). */
export class IntegrationTimeoutError extends Error {}

export interface InvokeOptions {
  fallbackName: string;
  region: string;
  timeoutMs: number;
  /** Each function's concurrency limit; unset, every invocation starts at once. */
  concurrency?: FunctionConcurrency;
}

/**
 * Calls the handler like Lambda would: a fresh context, and a deadline it cannot overrun. With
 * a concurrency limit, the invocation first waits for a slot of its function, and that wait is
 * part of the deadline (infra/local/function-concurrency.ts).
 */
export async function invokeLambda(
  target: RouteTarget,
  event: unknown,
  options: InvokeOptions,
): Promise<unknown> {
  const { functionName, handler } =
    typeof target === 'function' ? { functionName: options.fallbackName, handler: target } : target;
  const call = handler as (event: unknown, context: Context) => unknown;
  const deadlineAt = Date.now() + options.timeoutMs;
  const timedOut = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new IntegrationTimeoutError(
        `${functionName} timed out after ${options.timeoutMs} ms`,
      );
      timedOut.abort(error);
      reject(error);
    }, options.timeoutMs);
  });
  // A timeout while waiting for a slot rejects the wait itself; the race below may never read this.
  deadline.catch(() => {});
  try {
    const release = await options.concurrency?.acquire(functionName, timedOut.signal);
    const context = lambdaContext(functionName, options.region, deadlineAt - Date.now());
    const invocation = inInvocationScope(context.awsRequestId, () =>
      Promise.resolve().then(() => call(event, context)),
    );
    // The slot is the function instance's: held until the handler settles, past the deadline.
    if (release) void invocation.then(release, release);
    return await Promise.race([invocation, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

export interface ProxyResult {
  statusCode: number;
  body: string | undefined;
  headers: Record<string, string>;
}

/**
 * Reads a Lambda proxy result. No result at all counts as 200 (nothing to refuse); a result
 * without a numeric statusCode is malformed, which API Gateway reports as a 502.
 */
export function readProxyResult(result: unknown): ProxyResult | undefined {
  if (result === undefined || result === null)
    return { statusCode: 200, body: undefined, headers: {} };
  if (typeof result !== 'object') return undefined;
  const { statusCode, body, headers } = result as Record<string, unknown>;
  if (typeof statusCode !== 'number' || !Number.isInteger(statusCode)) return undefined;
  const stringHeaders: Record<string, string> = {};
  if (typeof headers === 'object' && headers !== null) {
    for (const [name, value] of Object.entries(headers)) stringHeaders[name] = String(value);
  }
  return { statusCode, body: typeof body === 'string' ? body : undefined, headers: stringHeaders };
}
