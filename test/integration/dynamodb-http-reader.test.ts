import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StoredToken } from '../../lib/domain/stored-token.ts';
import { DynamoDbHttpError, DynamoDbHttpReader } from '../../lib/store/dynamodb-http-reader.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { HttpTokenReader } from '../../lib/store/http-token-reader.ts';
import { authorizeDependencies } from '../../lib/wiring/authorize.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { wireCapture } from '../fixtures/sdk-wire.ts';

/**
 * The authorizer's SDK-less GetItem (lib/store/dynamodb-http-reader.ts) against dynalite, the
 * request it puts on the wire beside the SDK client's, and its retries against a stand-in
 * server that answers as DynamoDB does when it fails (a boundary dynalite cannot play).
 */
let dynamo: TestDynamo;
const local = async () => ({ accessKeyId: 'local', secretAccessKey: 'local' });

beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

const token: StoredToken = {
  id: 'tok-http-reader',
  secretHash: 'a'.repeat(64),
  namespace: 'shop',
  serviceAccount: 'web',
  createdAt: 1_795_000_000_000,
  expiresAt: 1_795_086_400_000,
  networks: ['net-a', 'net-b'],
};

describe('the token read without the SDK client', () => {
  it("reads a token as the SDK's store does, and nothing for an unknown id", async () => {
    const sdk = new DynamoDbTokenStore(dynamo.client, dynamo.tableName);
    await sdk.putToken(token);
    await sdk.revokeToken(token.id, 1_795_000_100_000);
    const reader = new HttpTokenReader(
      new DynamoDbHttpReader({
        region: 'us-east-1',
        endpoint: dynamo.endpoint,
        credentials: local,
      }),
      dynamo.tableName,
    );
    const read = await reader.getToken(token.id);
    expect(read).toEqual(await sdk.getToken(token.id));
    expect(read).toMatchObject({ networks: ['net-a', 'net-b'], revokedAt: 1_795_000_100_000 });
    expect(await reader.getToken('no-such-token')).toBeUndefined();
  });

  it("is the authorizer's wiring: an endpoint takes dummy credentials, as the SDK client's", async () => {
    const deps = authorizeDependencies({
      REGISTRAR_TABLE: dynamo.tableName,
      REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
    });
    expect(await deps.tokens.getToken(token.id)).toMatchObject({ id: token.id, namespace: 'shop' });
  });

  it('fails with the error DynamoDB answered, naming its type, for a table that does not exist', async () => {
    const reader = new DynamoDbHttpReader({
      region: 'us-east-1',
      endpoint: dynamo.endpoint,
      credentials: local,
    });
    const read = reader.getItem('no-such-table', { pk: 'TOKEN', sk: 'x' }, true);
    await expect(read).rejects.toBeInstanceOf(DynamoDbHttpError);
    await expect(read).rejects.toThrow(/ResourceNotFoundException/);
  });
});

describe('the request on the wire', () => {
  it("is the SDK client's GetItem: operation, protocol, body and signing scope", async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-11-25T12:00:00Z'));
    try {
      const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
      // Stops at the wire: the request the SDK would send, answered with no item.
      const wire = wireCapture();
      const client = DynamoDBDocumentClient.from(
        new DynamoDBClient({
          region: 'eu-west-1',
          credentials,
          requestHandler: wire.requestHandler,
        }),
      );
      await client.send(
        new GetCommand({
          TableName: 'registry',
          Key: { pk: 'TOKEN', sk: 'x' },
          ConsistentRead: true,
        }),
      );
      const reader = new DynamoDbHttpReader({
        region: 'eu-west-1',
        credentials: async () => credentials,
        now: () => new Date(),
      });
      const ours = await reader.signed(
        'GetItem',
        JSON.stringify({
          TableName: 'registry',
          Key: { pk: { S: 'TOKEN' }, sk: { S: 'x' } },
          ConsistentRead: true,
        }),
      );
      const theirs = wire.sent();
      const header = (headers: Record<string, string>, name: string) =>
        Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
      expect(ours.method).toBe(theirs.method);
      expect(ours.path).toBe(theirs.path);
      expect(ours.hostname).toBe('dynamodb.eu-west-1.amazonaws.com');
      for (const name of ['x-amz-target', 'content-type', 'x-amz-date', 'host']) {
        expect([name, header(ours.headers, name)]).toEqual([name, header(theirs.headers, name)]);
      }
      // The SDK's body is bytes (a Uint8Array that warns when read as a string).
      const text = (body: unknown) =>
        typeof body === 'string' ? body : new TextDecoder().decode(body as Uint8Array);
      expect(JSON.parse(ours.body as string)).toEqual(JSON.parse(text(theirs.body)));
      const scope = (headers: Record<string, string>) =>
        /Credential=([^,]+)/.exec(header(headers, 'authorization') ?? '')?.[1];
      expect(scope(ours.headers)).toBe('AKIDEXAMPLE/20261125/eu-west-1/dynamodb/aws4_request');
      expect(scope(ours.headers)).toBe(scope(theirs.headers));
      // Every header we send is signed (the SDK leaves only its user agent out).
      const signed = /SignedHeaders=([^,]+)/.exec(header(ours.headers, 'authorization') ?? '')?.[1];
      expect(signed?.split(';').sort()).toEqual(
        Object.keys(ours.headers)
          .map((h) => h.toLowerCase())
          .filter((h) => h !== 'authorization')
          .sort(),
      );
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('retries', () => {
  let server: Server;
  let answers: { status: number; body: unknown }[];
  let requests: number;
  let endpoint: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        requests += 1;
        const answer = answers.shift() ?? { status: 200, body: {} };
        response.writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.0' });
        response.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const reader = () =>
    new DynamoDbHttpReader({ region: 'us-east-1', endpoint, credentials: local });

  it('retries a 500 and a throttle, and returns the item of the third attempt', async () => {
    requests = 0;
    answers = [
      { status: 500, body: { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError' } },
      {
        status: 400,
        body: { __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', message: 'slow' },
      },
      { status: 200, body: { Item: { pk: { S: 'TOKEN' }, n: { N: '7' }, on: { BOOL: true } } } },
    ];
    expect(await reader().getItem('t', { pk: 'TOKEN', sk: 'x' }, true)).toEqual({
      pk: 'TOKEN',
      n: 7,
      on: true,
    });
    expect(requests).toBe(3);
  });

  it('gives up after three attempts, and never retries a refusal of the request itself', async () => {
    requests = 0;
    answers = [500, 500, 500].map((status) => ({
      status,
      body: { __type: 'x#InternalServerError' },
    }));
    await expect(reader().getItem('t', { pk: 'a', sk: 'b' }, true)).rejects.toThrow(
      /InternalServerError/,
    );
    expect(requests).toBe(3);
    requests = 0;
    answers = [
      { status: 400, body: { __type: 'x#ValidationException', message: 'bad key' } },
      { status: 200, body: {} },
    ];
    await expect(reader().getItem('t', { pk: 'a', sk: 'b' }, true)).rejects.toThrow(
      'DynamoDB ValidationException: bad key',
    );
    expect(requests).toBe(1);
    answers = [];
  });
});
