import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { HttpRequest } from '@smithy/protocol-http';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningStoreThread, startDynaliteThread } from '../../infra/local/dynalite-thread.ts';
import {
  createDocumentClient,
  createDynamoDbClient,
  documentClientFor,
} from '../../lib/store/dynamodb-client.ts';
import { ensureTable } from '../../lib/store/ensure-table.ts';

/**
 * The runtime's own clients reach its store thread over a message port (store-channel.ts): the
 * real SDK client and its middleware, dynalite's real request handler, no HTTP between them.
 */

const stores: RunningStoreThread[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

async function started(): Promise<RunningStoreThread> {
  const store = await startDynaliteThread();
  stores.push(store);
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: store.endpoint });
  await ensureTable(raw, 'registry').finally(() => raw.destroy());
  return store;
}

/** A client as the runtime builds it, pointed at a port nothing listens on: HTTP would fail. */
function channelClient(store: RunningStoreThread) {
  return createDocumentClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    transport: store.transport,
  });
}

describe('the local store channel', () => {
  it('carries requests to the store thread without HTTP, and the HTTP endpoint sees them', async () => {
    const store = await started();
    // What the SDK hands the channel, recorded on the way: the request is not signed.
    const sent: HttpRequest[] = [];
    const channel = store.transport.requestHandler;
    const recording = Object.assign(Object.create(channel) as typeof channel, {
      handle: (request: HttpRequest) => {
        sent.push(request);
        return channel.handle(request);
      },
    });
    const client = createDocumentClient({
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9',
      transport: { ...store.transport, requestHandler: recording },
    });
    await client.send(
      new PutCommand({ TableName: 'registry', Item: { pk: 'A', sk: 'B', note: 'über ✓' } }),
    );
    const http = createDocumentClient({ region: 'us-east-1', endpoint: store.endpoint });
    try {
      const read = await http.send(
        new GetCommand({ TableName: 'registry', Key: { pk: 'A', sk: 'B' } }),
      );
      expect(read.Item).toEqual({ pk: 'A', sk: 'B', note: 'über ✓' });
      expect(sent).toHaveLength(1);
      expect(sent[0]?.headers['x-amz-target']).toBe('DynamoDB_20120810.PutItem');
      expect(Object.keys(sent[0]?.headers ?? {}).map((name) => name.toLowerCase())).not.toContain(
        'authorization',
      );
    } finally {
      http.destroy();
    }
  });

  it('answers a refused condition as the SDK’s typed error', async () => {
    const store = await started();
    const client = channelClient(store);
    const put = () =>
      client.send(
        new PutCommand({
          TableName: 'registry',
          Item: { pk: 'A', sk: 'B' },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    await put();
    const error = await put().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConditionalCheckFailedException);
  });

  it('sends requests unsigned, and dynalite still refuses a malformed one by name', async () => {
    const store = await started();
    const handler = store.transport.requestHandler;
    const request = (body: string, headers: Record<string, string> = {}) =>
      handler.handle(
        new HttpRequest({
          method: 'POST',
          hostname: '127.0.0.1',
          path: '/',
          headers: {
            'content-type': 'application/x-amz-json-1.0',
            'x-amz-target': 'DynamoDB_20120810.GetItem',
            ...headers,
          },
          body,
        }),
      );
    const text = async (answer: Awaited<ReturnType<typeof request>>) =>
      new TextDecoder().decode(answer.response.body as Uint8Array);

    const unsigned = await request(
      JSON.stringify({ TableName: 'registry', Key: { pk: { S: 'A' }, sk: { S: 'B' } } }),
    );
    expect(unsigned.response.statusCode).toBe(200);
    expect(unsigned.response.headers['x-amzn-requestid']).toMatch(/^[A-Z0-9]{52}$/);

    const malformed = await request('{"TableName":');
    expect(malformed.response.statusCode).toBe(400);
    expect(await text(malformed)).toContain('SerializationException');

    // A header the sender did set is passed on as it is: dynalite checks its shape.
    const badlySigned = await request('{}', { authorization: 'Bearer nonsense' });
    expect(await text(badlySigned)).toContain('MissingAuthenticationTokenException');
  });

  it('fails requests in flight and after, naming the store, when its thread stops', async () => {
    const store = await started();
    const client = channelClient(store);
    const inFlight = client.send(
      new GetCommand({ TableName: 'registry', Key: { pk: 'A', sk: 'B' } }),
    );
    const refused = expect(inFlight).rejects.toThrow(
      /local DynamoDB store \(dynalite, .*\) is not running/,
    );
    await store.thread.terminate();
    await refused;
    await expect(
      client.send(new GetCommand({ TableName: 'registry', Key: { pk: 'A', sk: 'B' } })),
    ).rejects.toThrow(/is not running/);
    expect((await store.failed).message).toMatch(/stopped unexpectedly/);
  });

  it('refuses a request whose caller already gave up', async () => {
    const store = await started();
    const client = documentClientFor(
      createDynamoDbClient({
        region: 'us-east-1',
        endpoint: 'http://127.0.0.1:9',
        transport: store.transport,
      }),
    );
    const aborted = AbortSignal.abort();
    await expect(
      client.send(new GetCommand({ TableName: 'registry', Key: { pk: 'A', sk: 'B' } }), {
        abortSignal: aborted,
      }),
    ).rejects.toThrow(/aborted/i);
  });

  it('lets the store thread end by itself on close: the open channel does not hold it', async () => {
    const store = await started();
    await channelClient(store).send(
      new GetCommand({ TableName: 'registry', Key: { pk: 'A', sk: 'B' } }),
    );
    const exit = new Promise<number>((resolve) => store.thread.once('exit', resolve));
    stores.splice(stores.indexOf(store), 1);
    await store.close();
    // 0: it ran out of work and ended; a thread terminated after the close timeout exits with 1.
    expect(await exit).toBe(0);
  });
});
