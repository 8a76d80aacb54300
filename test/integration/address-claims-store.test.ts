import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressClaim } from '../../lib/registration/entry-lifecycle-store.ts';
import { ADDRESS_CLAIM_TTL_MS, addressKey } from '../../lib/store/dynamodb-address-claims.ts';
import { countRequests } from '../../lib/store/request-counter.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/** The address claim's requests, pinned, and their outcomes on real conditional writes. */
const T0 = Date.UTC(2025, 5, 1, 12);

let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

const claimOf = (name: string, at = T0, namespace = 'shop'): AddressClaim => ({
  address: '10.0.0.1',
  network: 'net-a',
  entry: { namespace, name },
  at,
});

describe('address claims', () => {
  it('claims a free address with one conditional put', async () => {
    const { store, client, tableName } = await freshRegistry(dynamo.endpoint, 'claims');
    const requests = countRequests(client);

    expect(await store.claimAddress(claimOf('g1-10.0.0.1-net-a'))).toEqual({ outcome: 'claimed' });

    expect(requests.counts()).toEqual({ PutItem: 1 });
    expect(requests.requests()[0]?.input).toEqual({
      TableName: tableName,
      Item: {
        pk: 'ADDR#net-a#10.0.0.1',
        sk: 'ADDR',
        entryNamespace: 'shop',
        entryName: 'g1-10.0.0.1-net-a',
        claimedAt: T0,
        expiresAt: Math.ceil((T0 + ADDRESS_CLAIM_TTL_MS) / 1000),
      },
      ConditionExpression:
        'attribute_not_exists(pk) OR (entryNamespace = :ns AND entryName = :name) OR #expires < :now',
      ExpressionAttributeNames: { '#expires': 'expiresAt' },
      ExpressionAttributeValues: {
        ':ns': 'shop',
        ':name': 'g1-10.0.0.1-net-a',
        ':now': Math.ceil(T0 / 1000),
      },
    });
  });

  it("renews its own claim, and answers with the holder when another entry's claim stands", async () => {
    const { store } = await freshRegistry(dynamo.endpoint, 'claims-held');
    await store.claimAddress(claimOf('g1-10.0.0.1-net-a'));
    expect(await store.claimAddress(claimOf('g1-10.0.0.1-net-a', T0 + 1_000))).toEqual({
      outcome: 'claimed',
    });

    expect(await store.claimAddress(claimOf('g2-10.0.0.1-net-a', T0 + 2_000, 'evil'))).toEqual({
      outcome: 'held',
      holder: { namespace: 'shop', name: 'g1-10.0.0.1-net-a' },
    });
  });

  it('takes an expired claim (its entry gone long ago, the TTL not yet run)', async () => {
    const { store, client, tableName } = await freshRegistry(dynamo.endpoint, 'claims-expired');
    await client.send(
      new PutCommand({
        TableName: tableName,
        Item: {
          ...addressKey({ address: '10.0.0.1', network: 'net-a' }),
          entryNamespace: 'shop',
          entryName: 'old',
          expiresAt: Math.ceil(T0 / 1000) - 1,
        },
      }),
    );
    expect(await store.claimAddress(claimOf('g2-10.0.0.1-net-a'))).toEqual({ outcome: 'claimed' });
  });

  it('takes a claim only from the holder it names: of two replacing one holder, one wins', async () => {
    const { store } = await freshRegistry(dynamo.endpoint, 'claims-take');
    await store.claimAddress(claimOf('old'));
    const from = { namespace: 'shop', name: 'old' };
    const [a, b] = await Promise.all([
      store.takeAddress(claimOf('g2-10.0.0.1-net-a'), from),
      store.takeAddress(claimOf('g3-10.0.0.1-net-a'), from),
    ]);
    expect([a, b].filter(Boolean)).toHaveLength(1);
  });
});
