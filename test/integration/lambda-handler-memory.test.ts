import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type HandlerHeap,
  HEAP_FUNCTIONS,
  type HeapFunction,
  INTERPRETER_ONLY,
  measureHandlerHeap,
} from '../../bench/handler-heap.ts';

/**
 * Issue 38: a warm Lambda container's heap stays flat for as long as it is invoked. Each
 * function's bundle, built as the CDK construct builds it, runs in a process of its own (one
 * warm container) and is invoked hundreds to thousands of times with the events API Gateway,
 * EventBridge or the schedule send it, against dynalite and the management API stand-in
 * (bench/handler-heap.ts). Its heap is read after a full GC after each of 12 batches; the
 * slope over the batches after the first quarter (Theil-Sen: one odd reading moves it little)
 * must stay under MAX_SLOPE. V8 runs without its compilers (INTERPRETER_ONLY): compiled code
 * grows for thousands of invocations and would hide a small leak for as long. `npm run bench -- handler-memory` runs the same for longer and
 * prints every reading (docs/benchmarks.md).
 */

/**
 * Bytes per 1,000 invocations. A function that keeps one small record per connection or per
 * event (a Map entry keyed by a connection id: ~100-200 bytes) grows 100-200 KB per 1,000; one
 * that keeps each event, megabytes. Flat functions read 5-40 KB here: the last bytecode and
 * feedback of rarer paths, budgets of new connections (docs/benchmarks.md).
 */
const MAX_SLOPE = 64 * 1024;

/**
 * The scheduled functions, per 1,000 runs: 1 KB a run. Each run reads and writes tens of items
 * and reaches code paths the first runs did not, so bytecode and feedback still arrive after
 * the warm-up of the ~100 runs that fit here (0.2-0.3 KB a run, slowing down; flat over the
 * bench's longer runs). A run that kept its result or a record per entry it touched exceeds it.
 */
const MAX_SLOPE_PER_RUN: Partial<Record<HeapFunction, number>> = {
  sweeper: 1024 * 1024,
  rollout: 1024 * 1024,
};

/**
 * Each function's invocations: a thousand or more where an invocation is cheap; fewer where
 * each one does the store work of several (`$connect`, the sweeper's and the rollout's runs).
 */
const INVOCATIONS: Record<HeapFunction, number> = {
  authorize: 1_800,
  connect: 480,
  disconnect: 600,
  message: 1_200,
  sweeper: 96,
  ec2StateChange: 1_200,
  rollout: 120,
  meshIdentity: 2_400,
};

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

function story(result: HandlerHeap): string {
  const readings = result.checkpoints.map((c) => `${c.invocations}: ${kb(c.heapUsed)}`).join(', ');
  return `${result.name}: slope ${kb(result.slopePer1000)} / 1,000 invocations after ${result.warmup} (lasting: ${kb(result.sustainedSlopePer1000)}); heap after each batch (after a GC) ${readings}${result.firstUnexpected ? `; first unexpected answer ${result.firstUnexpected}` : ''}`;
}

describe('the Lambda functions, warm, over thousands of invocations', () => {
  const results = new Map<HeapFunction, HandlerHeap>();
  beforeAll(async () => {
    for (const result of await measureHandlerHeap({
      invocations: INVOCATIONS,
      v8Flags: INTERPRETER_ONLY,
    })) {
      results.set(result.name, result);
    }
  }, 400_000);
  afterAll(() => {
    // The readings, for the log of a run that passed as well.
    for (const result of results.values()) console.log(story(result));
  });

  it.each(HEAP_FUNCTIONS)('%s keeps a flat heap', (name) => {
    const result = results.get(name);
    if (!result) throw new Error(`no measurement of ${name}`);
    expect(result.invocations).toBe(INVOCATIONS[name]);
    // Every invocation took the path the workload means (a leak on an error path is another test).
    expect(result.accepted, story(result)).toBe(result.invocations);
    // Growth that lasts (both halves of the counted readings), not a one-time step.
    expect(result.sustainedSlopePer1000, story(result)).toBeLessThan(
      MAX_SLOPE_PER_RUN[name] ?? MAX_SLOPE,
    );
  });
});
