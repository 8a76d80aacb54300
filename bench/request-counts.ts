import { WebSocket } from 'ws';
import { startDynalite } from '../infra/local/dynalite-server.ts';
import { startLocalRuntime } from '../infra/local/runtime.ts';
import { createJoinToken } from '../lib/auth/join-token.ts';
import { REPLACED_CLOSE_REASON } from '../lib/protocol/close-reasons.ts';
import { createDocumentClient } from '../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../lib/store/dynamodb-token-store.ts';
import { countRequests } from '../lib/store/request-counter.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { startCountingProxy } from './counting-proxy.ts';

export interface EventCost {
  event: string;
  requests: Record<string, number>;
  reads: number;
  writes: number;
}

const READS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem']);
const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);

/**
 * DynamoDB requests per agent event, counted on the wire between the local runtime and dynalite
 * while real WebSocket clients drive the real gateway, authorizer and handlers.
 */
export async function measureRequestCounts(): Promise<EventCost[]> {
  const dynamo = await startDynalite();
  const proxy = await startCountingProxy(dynamo.endpoint);
  const runtime = await startLocalRuntime({
    port: 0,
    memory: true,
    dynamoDbEndpoint: proxy.endpoint,
    sweepIntervalMs: 3_600_000,
    writeLocalJson: false,
    logLevel: 'ERROR',
  });
  const client = createDocumentClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const costs: EventCost[] = [];
  try {
    const store = composeRegistry(client, runtime.tableName);
    await store.applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'bench' },
      spec: { template: { ports: { http: 8080 } }, probe: { tcpSocket: { port: 8080 } } },
    });
    const { token, stored } = createJoinToken({
      namespace: 'bench',
      ttlMs: 3_600_000,
      now: Date.now(),
    });
    await new DynamoDbTokenStore(client, runtime.tableName).putToken(stored);
    const url = `${runtime.url}?group=web&namespace=bench&ip=10.0.0.1`;
    const headers = { Authorization: `Bearer ${token}` };
    const ref = { namespace: 'bench', name: 'web-10.0.0.1' };

    const measure = async (event: string, act: () => Promise<void>) => {
      await settle(proxy.counts);
      proxy.reset();
      await act();
      const requests = await settle(proxy.counts);
      costs.push({ event, requests, ...tally(requests) });
    };

    let first: WebSocket | undefined;
    let second: WebSocket | undefined;
    // $connect reads a namespace's settings and live count once, then trusts them for a while
    // (lib/registration/namespace-limits.ts): the first connect of a namespace in a function
    // instance pays for both; the connects after it (measured below) do not.
    await measure(FIRST_OF_NAMESPACE, async () => {
      await open(url.replace('10.0.0.1', '10.0.0.9'), headers);
    });
    await measure('connect (new entry)', async () => {
      first = await open(url, headers);
    });
    await measure('health (transition)', async () => {
      await exchange(first, { action: 'health', healthy: true });
    });
    await measure('health (same status)', async () => {
      await exchange(first, { action: 'health', healthy: true });
    });
    await measure('ping', async () => {
      await exchange(first, { action: 'ping' });
    });
    await measure('connect (make-before-break reconnect)', async () => {
      second = await open(url, headers);
    });
    await measure('disconnect (rotation: old connection closed as replaced)', async () => {
      await close(first, REPLACED_CLOSE_REASON);
    });
    await measure('disconnect (last connection)', async () => {
      await close(second);
      await until(async () => {
        const record = await store.getEntry(ref);
        return record?.connection?.disconnectedAt !== undefined;
      });
    });
    // Event history and cordon (issue 24): what they add, counted the same way.
    let third: WebSocket | undefined;
    await measure('connect (back after a disconnect: records Reconnected)', async () => {
      third = await open(url, headers);
    });
    const counted = composeRegistry(
      createDocumentClient({ region: 'us-east-1', endpoint: proxy.endpoint }),
      runtime.tableName,
    );
    await measure('cordon (registrar cordon, per entry)', async () => {
      await counted.cordon(ref, 'bench', Date.now());
    });
    await measure('uncordon (per entry)', async () => {
      await counted.uncordon(ref, Date.now());
    });
    await measure('drain (first)', async () => {
      await exchange(third, { action: 'drain' });
    });
    await measure('disconnect (last connection, after a drain)', async () => {
      await close(third);
      await until(async () => (await store.getEntry(ref))?.connection?.connectedAt === undefined);
    });
    // Counted on the deleting client itself: the runtime's own traffic in that window (a
    // loaded machine's late request of an earlier event) is not the deletion's.
    const record = await store.getEntry(ref);
    const sweeperClient = createDocumentClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
    try {
      const sweeperRequests = countRequests(sweeperClient);
      const sweeper = composeRegistry(sweeperClient, runtime.tableName);
      if (!record || (await sweeper.deleteSwept(record)) !== 'deleted') {
        throw new Error('the bench entry was not deleted');
      }
      const requests = sweeperRequests.counts();
      costs.push({
        event: 'delete by the sweeper (with its history item)',
        requests,
        ...tally(requests),
      });
    } finally {
      sweeperClient.destroy();
    }
    return costs;
  } finally {
    client.destroy();
    await runtime.close();
    await proxy.close();
    await dynamo.close();
  }
}

export const FIRST_OF_NAMESPACE =
  'connect (new entry, first of its namespace in this function instance)';

function tally(requests: Record<string, number>) {
  let reads = 0;
  let writes = 0;
  for (const [command, count] of Object.entries(requests)) {
    if (READS.has(command)) reads += count;
    if (WRITES.has(command)) writes += count;
  }
  return { reads, writes };
}

/** Waits until the counts stop changing for 300 ms (a $disconnect runs after the close). */
async function settle(counts: () => Record<string, number>): Promise<Record<string, number>> {
  let last = JSON.stringify(counts());
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = JSON.stringify(counts());
    if (now === last) return counts();
    last = now;
  }
}

async function until(check: () => Promise<boolean>) {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the entry to change');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function open(url: string, headers: Record<string, string>): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_req, res) =>
      reject(new Error(`refused: ${res.statusCode}`)),
    );
    socket.once('error', reject);
  });
}

function exchange(socket: WebSocket | undefined, message: object): Promise<unknown> {
  if (!socket) throw new Error('not connected');
  return new Promise((resolve) => {
    socket.once('message', (data) => resolve(JSON.parse(String(data))));
    socket.send(JSON.stringify(message));
  });
}

function close(socket: WebSocket | undefined, reason?: string): Promise<void> {
  if (!socket) throw new Error('not connected');
  return new Promise((resolve) => {
    socket.once('close', () => resolve());
    socket.close(1000, reason);
  });
}
