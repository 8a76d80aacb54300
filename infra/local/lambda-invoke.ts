import type { Context } from 'aws-lambda';
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
}

/** Calls the handler like Lambda would: a fresh context, and a deadline it cannot overrun. */
export async function invokeLambda(
  target: RouteTarget,
  event: unknown,
  options: InvokeOptions,
): Promise<unknown> {
  const { functionName, handler } =
    typeof target === 'function' ? { functionName: options.fallbackName, handler: target } : target;
  const context = lambdaContext(functionName, options.region, options.timeoutMs);
  const call = handler as (event: unknown, context: Context) => unknown;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new IntegrationTimeoutError(`${functionName} timed out after ${options.timeoutMs} ms`),
        ),
      options.timeoutMs,
    );
  });
  try {
    const invocation = inInvocationScope(context.awsRequestId, () =>
      Promise.resolve().then(() => call(event, context)),
    );
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
