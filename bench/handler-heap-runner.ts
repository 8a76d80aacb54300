/**
 * One warm Lambda container, as bench/handler-heap.ts drives it: this process (started with
 * `--expose-gc`, forked with an IPC channel) imports one function's bundle and nothing of the
 * project's, then answers each `{ batch, events }` message by invoking the handler once per
 * event, in order, each with its own Lambda context, and replies with the heap left after a
 * full GC. The heap counted is therefore the bundle's (its clients, caches and module state)
 * and this small loop's, never the store's or the event builders': they run in the parent.
 * `node --expose-gc bench/handler-heap-runner.ts <index.mjs> <function name> <timeout ms>`.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';

const [bundle, functionName = 'registrar', timeout = '10000'] = process.argv.slice(2);
if (!bundle || !process.send) {
  throw new Error('usage: fork(handler-heap-runner.ts, [<index.mjs>, <name>, <timeout ms>])');
}
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('start the runner with --expose-gc: the heap is read after a full GC');

type Handler = (event: unknown, context: unknown) => Promise<unknown>;
const { handler } = (await import(pathToFileURL(bundle).href)) as { handler: Handler };

export interface RunnerReply {
  batch: number;
  /** Bytes in use on the V8 heap after a full GC, once the batch's events were let go. */
  heapUsed: number;
  /**
   * Of heapUsed, compiled code and its metadata (V8's code and trusted spaces): it grows while
   * functions tier up to optimised code, and V8 bounds it by the code there is.
   */
  code: number;
  /** Off-heap memory of Buffers and ArrayBuffers (sockets, TLS, response bodies). */
  external: number;
  /** Invocations that answered as on the workload's expected path (see `accepted`). */
  accepted: number;
  invoked: number;
  /** The first unexpected answer or error of the batch, for the report. */
  firstUnexpected?: string;
  ms: number;
}

function context() {
  const deadline = Date.now() + Number(timeout);
  const awsRequestId = crypto.randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `bench/[$LATEST]${awsRequestId.replace(/-/g, '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/**
 * Whether a result is the expected one: an Allow policy, a 200 whose body (if any) is not a
 * refusal, or a plain object (the scheduled functions' summaries).
 */
function accepted(result: unknown, expectRefusal: boolean): boolean {
  const r = result as {
    statusCode?: number;
    body?: string;
    policyDocument?: { Statement?: { Effect?: string }[] };
  };
  if (r?.policyDocument) return r.policyDocument.Statement?.[0]?.Effect === 'Allow';
  if (r?.statusCode !== undefined) {
    if (r.statusCode !== 200) return false;
    const ok = r.body === undefined ? true : (JSON.parse(r.body) as { ok?: boolean }).ok !== false;
    return ok !== expectRefusal;
  }
  return typeof r === 'object' && r !== null && !expectRefusal;
}

/** Two full collections a turn apart: weak references and finalizers settle in between. */
async function heapAfterGc(): Promise<{ heapUsed: number; code: number; external: number }> {
  await nextTurn();
  gc?.();
  await nextTurn();
  gc?.();
  const code = getHeapSpaceStatistics()
    .filter((space) => /^(code|trusted)_/.test(space.space_name))
    .reduce((sum, space) => sum + space.space_used_size, 0);
  return {
    heapUsed: getHeapStatistics().used_heap_size,
    code,
    external: process.memoryUsage().external,
  };
}

process.on(
  'message',
  async (message: { batch: number; events: unknown[]; expectRefusal?: boolean }) => {
    const started = performance.now();
    let ok = 0;
    let firstUnexpected: string | undefined;
    const { events } = message;
    for (let i = 0; i < events.length; i++) {
      try {
        const result = await handler(events[i], context());
        if (accepted(result, message.expectRefusal === true)) ok += 1;
        else firstUnexpected ??= JSON.stringify(result).slice(0, 300);
      } catch (error) {
        firstUnexpected ??=
          error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      }
    }
    const invoked = events.length;
    // The batch's events are garbage from here on: only what the function kept is counted.
    events.length = 0;
    const ms = performance.now() - started;
    const reply: RunnerReply = {
      batch: message.batch,
      ...(await heapAfterGc()),
      accepted: ok,
      invoked,
      ms,
      ...(firstUnexpected === undefined ? {} : { firstUnexpected }),
    };
    process.send?.(reply);
  },
);
process.on('disconnect', () => process.exit(0));
process.send?.({ ready: true, ...(await heapAfterGc()) });
