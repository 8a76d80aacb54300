import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Lambda runs one invocation at a time per execution environment; the local gateway runs every
 * invocation in one process, concurrently. Powertools' Logger and Metrics keep per-invocation
 * state (the keys a handler appends, such as `connectionId` and `entry`, and the metrics it
 * adds) in one shared object, unless invocations are scoped the way Lambda's multi-concurrency
 * runtime scopes them: `AWS_LAMBDA_MAX_CONCURRENCY` set, and an `InvokeStore` on
 * `globalThis.awslambda` backed by AsyncLocalStorage. Without it, a `$connect` log line could
 * carry the `connectionId` of another connection whose event ran in between, and one
 * invocation's end cleared the keys of another still running.
 *
 * This is that store, in the shape of `@aws/lambda-invoke-store`'s (what Powertools calls).
 * Only the local runtime installs it: on Lambda, the runtime provides its own.
 */
type InvocationContext = Record<string | symbol, unknown>;

const PROTECTED_KEYS = {
  REQUEST_ID: Symbol.for('_AWS_LAMBDA_REQUEST_ID'),
  X_RAY_TRACE_ID: Symbol.for('_AWS_LAMBDA_X_RAY_TRACE_ID'),
  TENANT_ID: Symbol.for('_AWS_LAMBDA_TENANT_ID'),
  TRACEPARENT: Symbol.for('_AWS_LAMBDA_TRACEPARENT'),
  TRACESTATE: Symbol.for('_AWS_LAMBDA_TRACESTATE'),
  BAGGAGE: Symbol.for('_AWS_LAMBDA_BAGGAGE'),
} as const;

class LocalInvokeStore {
  static readonly PROTECTED_KEYS = PROTECTED_KEYS;
  readonly #invocations = new AsyncLocalStorage<InvocationContext>();

  getContext(): InvocationContext | undefined {
    return this.#invocations.getStore();
  }
  hasContext(): boolean {
    return this.#invocations.getStore() !== undefined;
  }
  get<T = unknown>(key: string | symbol): T | undefined {
    return this.#invocations.getStore()?.[key] as T | undefined;
  }
  set<T = unknown>(key: string | symbol, value: T): void {
    if (Object.values(PROTECTED_KEYS).includes(key as symbol)) {
      throw new Error(`Cannot modify protected Lambda context field: ${String(key)}`);
    }
    const context = this.#invocations.getStore();
    if (!context) throw new Error('No context available');
    context[key] = value;
  }
  run<T>(context: InvocationContext, fn: () => T): T {
    return this.#invocations.run(context, fn);
  }
  getRequestId(): string {
    return this.get<string>(PROTECTED_KEYS.REQUEST_ID) ?? '-';
  }
  getXRayTraceId(): string | undefined {
    return this.get(PROTECTED_KEYS.X_RAY_TRACE_ID);
  }
  getTenantId(): string | undefined {
    return this.get(PROTECTED_KEYS.TENANT_ID);
  }
  getTraceparent(): string | undefined {
    return this.get(PROTECTED_KEYS.TRACEPARENT);
  }
  getTracestate(): string | undefined {
    return this.get(PROTECTED_KEYS.TRACESTATE);
  }
  getBaggage(): string | undefined {
    return this.get(PROTECTED_KEYS.BAGGAGE);
  }
}

interface InvokeStore {
  run<T>(context: InvocationContext, fn: () => T): T;
}

const lambdaGlobal = globalThis as { awslambda?: { InvokeStore?: InvokeStore } };

const store = new LocalInvokeStore();

/**
 * The process's store is this one. The AWS SDK, when it loads outside Lambda, installs a
 * single-context store (no isolation) that would otherwise be the one Powertools finds.
 */
function invokeStore(): InvokeStore {
  lambdaGlobal.awslambda ??= {};
  lambdaGlobal.awslambda.InvokeStore = store;
  // Powertools reads the variable on every access: from here on, state inside an invocation
  // is the invocation's own. Outside one (at start, in tests) it stays shared, as before.
  process.env.AWS_LAMBDA_MAX_CONCURRENCY ??= '1000';
  return store;
}

/** Runs one invocation with its own Powertools state, as Lambda would. */
export function inInvocationScope<T>(requestId: string, fn: () => T): T {
  return invokeStore().run({ [PROTECTED_KEYS.REQUEST_ID]: requestId }, fn);
}
