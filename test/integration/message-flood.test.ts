import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { isConnected } from '../../lib/domain/entry-record.ts';
import { DEFAULT_MESSAGE_BUDGET } from '../../lib/domain/message-budget.ts';
import { onRefusal } from '../../lib/observability.ts';
import { startTenantRuntime, type TenantRuntime, until } from '../fixtures/tenant-runtime.ts';
import type { TestClient } from '../fixtures/websocket-client.ts';

/**
 * A message flood, played by a tenant that holds `evil`'s join token: one connection sends
 * health reports as fast as its socket takes them, to use up the capacity every namespace's
 * agents share (on AWS, the stage's route throttle and the message function). Real WebSocket
 * clients against the local runtime (gateway, authorizer, handlers, dynalite).
 */
let tenants: TenantRuntime;
const open: TestClient[] = [];
const refusals: string[] = [];
let stopListening: () => void;

beforeAll(async () => {
  tenants = await startTenantRuntime({ shop: ['web'], evil: ['web'] });
  stopListening = onRefusal((reason) => refusals.push(reason));
});
afterAll(async () => {
  stopListening?.();
  await tenants?.close();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
});

async function connect(namespace: string, ip: string): Promise<TestClient> {
  const client = await tenants.connect(namespace, 'web', ip);
  open.push(client);
  return client;
}

describe('a connection that floods messages', () => {
  it("is refused past its budget and closed, once, while another namespace's VM is answered", async () => {
    const shop = await connect('shop', '10.0.0.1');
    const evil = await connect('evil', '10.9.0.1');
    const replies: { ok?: boolean; error?: { code: string } }[] = [];
    evil.socket.on('message', (data) => replies.push(JSON.parse(data.toString())));

    const flood = DEFAULT_MESSAGE_BUDGET.messages * 2;
    for (let i = 0; i < flood; i++) {
      evil.socket.send(JSON.stringify({ action: 'health', healthy: i % 2 === 0 }));
    }
    // The server closes it: DELETE @connections, as API Gateway's management API does.
    const closed = await evil.closed;
    expect(closed.code).toBe(1000);
    // Messages past the budget are answered 429 until the close lands; how many of those answers
    // the client reads before its socket closes depends on the machine's timing (none, on a loaded
    // one): the refusal itself is asserted where it is counted, below.
    const refused = replies.filter((reply) => reply.error?.code === 'MessageRateExceeded');
    // Within the budget, messages were handled as usual (their answers may come after the
    // close, and are dropped with it): nothing else was refused, and never more than the
    // budget was answered.
    expect(replies.filter((reply) => !reply.ok && !refused.includes(reply))).toEqual([]);
    expect(replies.filter((reply) => reply.ok).length).toBeLessThanOrEqual(
      DEFAULT_MESSAGE_BUDGET.messages,
    );
    // Counted once (the flood must not flood the logs and metrics as well).
    expect(refusals.filter((reason) => reason === 'MessageRateExceeded')).toEqual([
      'MessageRateExceeded',
    ]);

    // The other namespace's VM is answered, and its report lands.
    const answer = await shop.request({ action: 'health', healthy: false, message: 'disk' });
    expect(answer.ok).toBe(true);
    const record = await until(async () => {
      const found = await tenants.store.getEntry({ namespace: 'shop', name: 'web-10.0.0.1' });
      return found?.health?.status === 'False' ? found : undefined;
    });
    expect(isConnected(record)).toBe(true);

    // The flooding VM's entry departed with its connection; coming back meets its namespace's
    // connect quotas like any reconnect.
    await until(async () => {
      const found = await tenants.store.getEntry({ namespace: 'evil', name: 'web-10.9.0.1' });
      return found && !isConnected(found);
    });
    const back = await connect('evil', '10.9.0.1');
    expect((await back.request({ action: 'health', healthy: true })).ok).toBe(true);
  });
});
