import { describe, expect, it } from 'vitest';
import {
  FunctionConcurrency,
  parseFunctionConcurrency,
} from '../../infra/local/function-concurrency.ts';
import { IntegrationTimeoutError, invokeLambda } from '../../infra/local/lambda-invoke.ts';

/**
 * The local runtime's per-function concurrency limit (`npm start --function-concurrency`):
 * at most N invocations of a function at once, the rest in arrival order; a caller that gives
 * up while waiting never runs; a slot is held until the invocation settles, however it settles.
 */

/** A promise and the hands that settle it. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every queued promise callback run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const never = new AbortController().signal;

describe('FunctionConcurrency', () => {
  it('runs at most the limit at once and starts the rest in the order they came', async () => {
    const limit = new FunctionConcurrency(2);
    const started: string[] = [];
    const releases = new Map<string, () => void>();
    for (const name of ['a', 'b', 'c', 'd', 'e']) {
      void limit.acquire('connect', never).then((release) => {
        started.push(name);
        releases.set(name, release);
      });
    }
    await settle();
    expect(started).toEqual(['a', 'b']);
    expect(limit.load('connect')).toEqual({ running: 2, waiting: 3 });

    releases.get('b')?.();
    await settle();
    expect(started).toEqual(['a', 'b', 'c']);
    releases.get('a')?.();
    releases.get('c')?.();
    await settle();
    expect(started).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(limit.load('connect')).toEqual({ running: 2, waiting: 0 });
    releases.get('d')?.();
    releases.get('e')?.();
    expect(limit.load('connect')).toEqual({ running: 0, waiting: 0 });
  });

  it('counts each function on its own', async () => {
    const limit = new FunctionConcurrency(1);
    const connect = await limit.acquire('registrar-connect', never);
    // A full $connect does not hold up the authorizer or $disconnect.
    const authorize = await limit.acquire('registrar-authorize', never);
    const disconnect = await limit.acquire('registrar-disconnect', never);
    expect(limit.load('registrar-connect')).toEqual({ running: 1, waiting: 0 });
    for (const release of [connect, authorize, disconnect]) release();
    expect(limit.load('registrar-authorize')).toEqual({ running: 0, waiting: 0 });
  });

  it('takes a caller that gives up out of the line: it never starts, and the next one does', async () => {
    const limit = new FunctionConcurrency(1);
    const first = await limit.acquire('connect', never);
    const givesUp = new AbortController();
    const started: string[] = [];
    const late = limit.acquire('connect', givesUp.signal).then(() => started.push('late'));
    const next = limit.acquire('connect', never).then((release) => {
      started.push('next');
      return release;
    });
    givesUp.abort(new Error('integration timeout'));
    await expect(late).rejects.toThrow('integration timeout');
    expect(limit.load('connect')).toEqual({ running: 1, waiting: 1 });

    first();
    (await next)();
    expect(started).toEqual(['next']);
    expect(limit.load('connect')).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses a caller whose deadline has already passed without queueing it', async () => {
    const limit = new FunctionConcurrency(1);
    const gone = AbortSignal.abort(new Error('too late'));
    await expect(limit.acquire('connect', gone)).rejects.toThrow('too late');
    expect(limit.load('connect')).toEqual({ running: 0, waiting: 0 });
  });

  it('frees one slot when a release is called twice', async () => {
    const limit = new FunctionConcurrency(2);
    const a = await limit.acquire('connect', never);
    await limit.acquire('connect', never);
    a();
    a();
    expect(limit.load('connect')).toEqual({ running: 1, waiting: 0 });
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses a limit of %s', (value) => {
    expect(() => new FunctionConcurrency(value)).toThrow(
      `function concurrency must be a whole number of at least 1, not ${value}`,
    );
  });

  it('reads --function-concurrency as a whole number of at least 1', () => {
    expect(parseFunctionConcurrency('32')).toBe(32);
    expect(parseFunctionConcurrency(' 4 ')).toBe(4);
    for (const bad of ['0', '-3', '2.5', 'many', '']) {
      expect(() => parseFunctionConcurrency(bad)).toThrow('must be a whole number of at least 1');
    }
  });
});

describe('invokeLambda with a concurrency limit', () => {
  const options = (concurrency: FunctionConcurrency, timeoutMs = 60_000) => ({
    fallbackName: 'registrar-connect',
    region: 'us-east-1',
    timeoutMs,
    concurrency,
  });

  it('starts the next invocation of a function only when one has settled, answered or thrown', async () => {
    const limit = new FunctionConcurrency(1);
    const gate = deferred<string>();
    const calls: string[] = [];
    const first = invokeLambda(
      async () => {
        calls.push('first');
        return gate.promise;
      },
      {},
      options(limit),
    );
    const second = invokeLambda(
      async () => {
        calls.push('second');
        throw new Error('the handler failed');
      },
      {},
      options(limit),
    );
    const third = invokeLambda(
      async () => {
        calls.push('third');
        return 'third answered';
      },
      {},
      options(limit),
    );
    await settle();
    expect(calls).toEqual(['first']);

    gate.resolve('first answered');
    await expect(first).resolves.toBe('first answered');
    // The failed invocation gives its slot back as an answered one does.
    await expect(second).rejects.toThrow('the handler failed');
    await expect(third).resolves.toBe('third answered');
    expect(calls).toEqual(['first', 'second', 'third']);
    expect(limit.load('registrar-connect')).toEqual({ running: 0, waiting: 0 });
  });

  it('times out an invocation still waiting for a slot, and never runs it', async () => {
    const limit = new FunctionConcurrency(1);
    const gate = deferred();
    const calls: string[] = [];
    const running = invokeLambda(
      async () => {
        calls.push('running');
        await gate.promise;
      },
      {},
      options(limit),
    );
    await settle();
    const waiting = invokeLambda(
      async () => {
        calls.push('timed out while waiting');
      },
      {},
      options(limit, 20),
    );
    await expect(waiting).rejects.toBeInstanceOf(IntegrationTimeoutError);
    await expect(waiting).rejects.toThrow('registrar-connect timed out after 20 ms');

    // The slot it waited for goes to the next caller, not to the one that gave up.
    const next = invokeLambda(
      async () => {
        calls.push('next');
      },
      {},
      options(limit),
    );
    gate.resolve();
    await running;
    await next;
    expect(calls).toEqual(['running', 'next']);
  });

  it('keeps the slot of an invocation that outlives its deadline until it settles', async () => {
    const limit = new FunctionConcurrency(1);
    const gate = deferred();
    const overrun = invokeLambda(() => gate.promise, {}, options(limit, 20));
    await expect(overrun).rejects.toBeInstanceOf(IntegrationTimeoutError);
    // API Gateway stopped waiting; the function is still running, as on Lambda.
    expect(limit.load('registrar-connect')).toEqual({ running: 1, waiting: 0 });

    let nextRan = false;
    const next = invokeLambda(
      async () => {
        nextRan = true;
      },
      {},
      options(limit),
    );
    await settle();
    expect(nextRan).toBe(false);
    gate.resolve();
    await next;
    expect(nextRan).toBe(true);
  });

  it('gives the handler what is left of the deadline after its wait', async () => {
    const limit = new FunctionConcurrency(1);
    const gate = deferred();
    const first = invokeLambda(() => gate.promise, {}, options(limit));
    let remaining = Number.NaN;
    const second = invokeLambda(
      (_event: never, context: { getRemainingTimeInMillis(): number }) => {
        remaining = context.getRemainingTimeInMillis();
      },
      {},
      options(limit, 60_000),
    );
    // Hold the slot until the second invocation's clock has visibly run.
    const waitedFrom = Date.now();
    while (Date.now() - waitedFrom < 30) await settle();
    gate.resolve();
    await first;
    await second;
    expect(remaining).toBeGreaterThan(50_000);
    expect(remaining).toBeLessThanOrEqual(60_000 - 30);
  });
});
