import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { startDynalite } from '../../infra/local/dynalite-server.ts';
import { startDynamoDbLocal } from '../../infra/local/dynamodb-local-server.ts';
import { createDynamoDbClient, documentClientFor } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { ensureTable } from '../../lib/store/ensure-table.ts';
import { javaAvailable } from '../fixtures/dynamo.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const token = { id: 't1', secretHash: 'h', namespace: 'shop', createdAt: 1, expiresAt: 2 };

describe('dynalite', () => {
  it('keeps the data on disk across restarts (classic-level loads)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'registrar-dynalite-'));
    dirs.push(dataDir);
    const first = await startDynalite({ dataDir });
    const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: first.endpoint });
    await ensureTable(raw, 'registry');
    await new DynamoDbTokenStore(documentClientFor(raw), 'registry').putToken(token);
    raw.destroy();
    await first.close();

    const second = await startDynalite({ dataDir });
    const again = createDynamoDbClient({ region: 'us-east-1', endpoint: second.endpoint });
    try {
      await ensureTable(again, 'registry');
      expect(
        await new DynamoDbTokenStore(documentClientFor(again), 'registry').getToken('t1'),
      ).toEqual(token);
    } finally {
      again.destroy();
      await second.close();
    }
  });

  it('creates the on-demand table with the sparse sweep and instance indexes', async () => {
    const server = await startDynalite();
    const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: server.endpoint });
    try {
      await ensureTable(raw, 'registry');
      await ensureTable(raw, 'registry');
      const { Table } = await raw.send(new DescribeTableCommand({ TableName: 'registry' }));
      expect(Table?.TableStatus).toBe('ACTIVE');
      expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
      // The sparse sweep index, and the instance index EC2's state changes are looked up by.
      expect(Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName).sort()).toEqual([
        'instance',
        'sweep',
      ]);
    } finally {
      raw.destroy();
      await server.close();
    }
  });
});

describe.runIf(javaAvailable())('DynamoDB Local', () => {
  it('starts on a free port, answers, and stops', async () => {
    const server = await startDynamoDbLocal();
    const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: server.endpoint });
    try {
      await ensureTable(raw, 'registry');
      const { Table } = await raw.send(new DescribeTableCommand({ TableName: 'registry' }));
      expect(Table?.TableStatus).toBe('ACTIVE');
    } finally {
      raw.destroy();
      await server.close();
    }
    await expect(fetch(server.endpoint)).rejects.toThrow();
  });
});
