import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { StoredToken } from '../../lib/domain/stored-token.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { EXPIRES_AT_ATTRIBUTE } from '../../lib/store/item-codec.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

let dynamo: TestDynamo;
let tokens: DynamoDbTokenStore;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  tokens = new DynamoDbTokenStore(dynamo.client, dynamo.tableName);
});
afterAll(async () => {
  await dynamo?.close();
});

function token(id: string, extra: Partial<StoredToken> = {}): StoredToken {
  return {
    id,
    secretHash: `sha256-of-${id}`,
    namespace: 'shop',
    createdAt: 1_000,
    expiresAt: 9_000,
    ...extra,
  };
}

it('stores a token and reads it back by id', async () => {
  await tokens.putToken(token('t1', { serviceAccount: 'web' }));

  expect(await tokens.getToken('t1')).toEqual(token('t1', { serviceAccount: 'web' }));
  expect(await tokens.getToken('missing')).toBeUndefined();
});

it('refuses to overwrite an existing token', async () => {
  await tokens.putToken(token('t2'));

  await expect(tokens.putToken(token('t2', { namespace: 'other' }))).rejects.toThrow(
    /already exists/,
  );
  expect((await tokens.getToken('t2'))?.namespace).toBe('shop');
});

it('revokes a token once and keeps the first revocation time', async () => {
  await tokens.putToken(token('t3'));

  expect(await tokens.revokeToken('t3', 5_000)).toBe(true);
  expect(await tokens.revokeToken('t3', 6_000)).toBe(true);
  expect((await tokens.getToken('t3'))?.revokedAt).toBe(5_000);
});

it('does not create a token when revoking an unknown id', async () => {
  expect(await tokens.revokeToken('nope', 5_000)).toBe(false);
  expect(await tokens.getToken('nope')).toBeUndefined();
});

it('lists every token', async () => {
  await tokens.putToken(token('t4'));

  const ids = (await tokens.listTokens()).map((stored) => stored.id);

  expect(ids).toEqual(expect.arrayContaining(['t1', 't2', 't3', 't4']));
});

it('keeps the expiry out of the TTL attribute, and still reads tokens stored with it there', async () => {
  await tokens.putToken(token('t-ttl'));
  const { Item } = await dynamo.client.send(
    new GetCommand({ TableName: dynamo.tableName, Key: { pk: 'TOKEN', sk: 't-ttl' } }),
  );
  expect(Item?.[EXPIRES_AT_ATTRIBUTE]).toBeUndefined();
  expect(Item?.validUntil).toBe(9_000);

  // As a token created before validUntil was stored.
  await dynamo.client.send(
    new PutCommand({
      TableName: dynamo.tableName,
      Item: {
        pk: 'TOKEN',
        sk: 't-old',
        secretHash: 'h',
        namespace: 'shop',
        createdAt: 1,
        expiresAt: 7_000,
      },
    }),
  );
  expect(await tokens.getToken('t-old')).toEqual({
    id: 't-old',
    secretHash: 'h',
    namespace: 'shop',
    createdAt: 1,
    expiresAt: 7_000,
  });
  expect((await tokens.listTokens()).find((t) => t.id === 't-old')?.expiresAt).toBe(7_000);
});
