import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbCatalog } from '../../lib/store/dynamodb-catalog.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * Writes retried by the SDK after the first attempt was applied but answered with a 500 (or
 * its response was lost): the retry meets the state its own first attempt left, and must
 * report success, not "already exists" or "unchanged".
 */

let dynamo: TestDynamo;
let armed: string | undefined;
let failures = 0;

/**
 * A store that answers 500 after applying: the request reaches the table, then the response
 * is replaced by a retryable server error, so the SDK's retry strategy sends it again.
 */
function answer500AfterApplying(client: DynamoDBDocumentClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (armed !== undefined && context.commandName === armed) {
        armed = undefined;
        failures++;
        throw Object.assign(new Error('We encountered an internal error. Please try again.'), {
          name: 'InternalServerError',
          $fault: 'server',
          $metadata: { httpStatusCode: 500 },
        });
      }
      return result;
    },
    { step: 'deserialize', name: 'answer500AfterApplying' },
  );
}

beforeAll(async () => {
  dynamo = await startTestDynamo();
  answer500AfterApplying(dynamo.client);
});
afterEach(() => {
  armed = undefined;
  failures = 0;
});
afterAll(async () => {
  await dynamo?.close();
});

describe('retry-safe writes', () => {
  it('token create returns the token whose write was applied but answered 500', async () => {
    const tokens = new DynamoDbTokenStore(dynamo.client, dynamo.tableName);
    const stored = {
      id: 'abcdefghijkl',
      secretHash: 'a'.repeat(64),
      namespace: 'shop',
      createdAt: 1_000,
      expiresAt: 9_000,
    };
    armed = 'PutItemCommand';
    await expect(tokens.putToken(stored)).resolves.toBeUndefined();
    expect(failures).toBe(1);
    expect(await tokens.getToken(stored.id)).toEqual(stored);
  });

  it('token create still refuses an id taken by another token', async () => {
    const tokens = new DynamoDbTokenStore(dynamo.client, dynamo.tableName);
    const first = {
      id: 'mnopqrstuvwx',
      secretHash: 'b'.repeat(64),
      namespace: 'shop',
      createdAt: 1,
      expiresAt: 2,
    };
    await tokens.putToken(first);
    await expect(tokens.putToken({ ...first, secretHash: 'c'.repeat(64) })).rejects.toThrow(
      "join token 'mnopqrstuvwx' already exists",
    );
  });

  it('apply reports created for a group whose create was applied but answered 500', async () => {
    const catalog = new DynamoDbCatalog(dynamo.client, dynamo.tableName);
    armed = 'PutItemCommand';
    const result = await catalog.applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { template: { ports: { http: 8080 } } },
    });
    expect(failures).toBe(1);
    expect(result.outcome).toBe('created');
    expect((await catalog.getGroup({ namespace: 'shop', name: 'web' }))?.generation).toBe(1);
  });

  it('apply reports updated for a group whose update was applied but answered 500', async () => {
    const catalog = new DynamoDbCatalog(dynamo.client, dynamo.tableName);
    armed = 'PutItemCommand';
    const result = await catalog.applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { template: { ports: { http: 9090 } } },
    });
    expect(failures).toBe(1);
    expect(result.outcome).toBe('updated');
    expect((await catalog.getGroup({ namespace: 'shop', name: 'web' }))?.generation).toBe(2);
  });

  it('apply reports created for a hand-made entry whose create was applied but answered 500', async () => {
    const catalog = new DynamoDbCatalog(dynamo.client, dynamo.tableName);
    armed = 'PutItemCommand';
    const outcome = await catalog.applyEntry({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name: 'db-1', namespace: 'shop' },
      spec: { address: '10.0.0.5' },
    });
    expect(failures).toBe(1);
    expect(outcome).toBe('created');
  });
});
