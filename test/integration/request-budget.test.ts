import { expect, it } from 'vitest';

import {
  type EventCost,
  FIRST_OF_NAMESPACE,
  measureRequestCounts,
} from '../../bench/request-counts.ts';

/**
 * DESIGN's budget per event in token mode, counted on the wire between the local runtime and
 * its store while real WebSocket clients drive the gateway, authorizer and handlers (the same
 * measurement `npm run bench` prints).
 */
it('keeps every agent event within its DynamoDB request budget', async () => {
  const costs = await measureRequestCounts();
  const of = (event: string): EventCost => {
    const cost = costs.find((c) => c.event === event);
    if (!cost) throw new Error(`no measurement for ${event}`);
    return cost;
  };

  // 1 token read (authorizer) + 1 group read + 1 write; a new entry counts itself in its cell
  // (fail static: one more write when an entry becomes connected or leaves). It reads its group
  // once: written within the group-read window, it is in the listing of any `delete wg` that
  // its read missed (lib/registration/group-read-window.ts; only a connect slower than the
  // window reads the group again). Every connect claims its address first (an address is
  // unique within a network): one put. Every connect counts itself against its namespace's
  // connect rate: one conditional ADD.
  expect(of('connect (new entry)').requests).toEqual({ GetItem: 2, PutItem: 1, UpdateItem: 3 });
  expect(of('connect (make-before-break reconnect)').requests).toEqual({
    GetItem: 2,
    PutItem: 1,
    UpdateItem: 2,
  });
  // The first connect of a namespace in a function instance also reads the namespace's
  // settings (one GetItem) and its live count (one Query per counter partition of its cells,
  // 8); later connects trust both for a while (lib/registration/namespace-limits.ts).
  expect(of(FIRST_OF_NAMESPACE).requests).toEqual({
    GetItem: 3,
    PutItem: 1,
    Query: 8,
    UpdateItem: 3,
  });
  // A report first tries the write that keeps the status (the common case: the agent repeats
  // its state on every new connection); a transition is the second write, which records its
  // event (the first one's condition failed).
  expect(of('health (transition)').requests).toEqual({ UpdateItem: 2 });
  expect(of('health (same status)').requests).toEqual({ UpdateItem: 1 });
  expect(of('ping').requests).toEqual({});
  expect(of('disconnect (rotation: old connection closed as replaced)').requests).toEqual({
    UpdateItem: 1,
  });
  expect(of('disconnect (last connection)').requests).toEqual({ UpdateItem: 2 });
  // Event history rides on these writes; it costs a request of its own only where no state
  // write happens anyway: a VM back within its grace period (Reconnected), and a deletion
  // (the history item that outlives the entry).
  // The entry, its zone counter, the connect rate, and the Reconnected event.
  expect(of('connect (back after a disconnect: records Reconnected)').requests).toEqual({
    GetItem: 2,
    PutItem: 1,
    UpdateItem: 4,
  });
  expect(of('cordon (registrar cordon, per entry)').requests).toEqual({ UpdateItem: 1 });
  expect(of('uncordon (per entry)').requests).toEqual({ UpdateItem: 1 });
  expect(of('drain (first)').requests).toEqual({ UpdateItem: 1 });
  // The entry, the history item that outlives it, and its part of its cell's counters.
  expect(of('delete by the sweeper (with its history item)').requests).toEqual({
    DeleteItem: 1,
    PutItem: 1,
    UpdateItem: 1,
  });
}, 60_000);
