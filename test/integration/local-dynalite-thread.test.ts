import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startDynaliteThread } from '../../infra/local/dynalite-thread.ts';
import { createDynamoDbClient, documentClientFor } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { ensureTable } from '../../lib/store/ensure-table.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const token = { id: 't1', secretHash: 'h', namespace: 'shop', createdAt: 1, expiresAt: 2 };

async function putToken(endpoint: string): Promise<void> {
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint });
  try {
    await ensureTable(raw, 'registry');
    await new DynamoDbTokenStore(documentClientFor(raw), 'registry').putToken(token);
  } finally {
    raw.destroy();
  }
}

async function readToken(endpoint: string) {
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint });
  try {
    await ensureTable(raw, 'registry');
    return await new DynamoDbTokenStore(documentClientFor(raw), 'registry').getToken('t1');
  } finally {
    raw.destroy();
  }
}

describe('dynalite on its own thread', () => {
  it('keeps a data dir across a close and a restart (the thread releases LevelDB on close)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'registrar-dynalite-thread-'));
    dirs.push(dataDir);
    const first = await startDynaliteThread({ dataDir });
    await putToken(first.endpoint);
    await first.close();

    const second = await startDynaliteThread({ dataDir });
    try {
      expect(await readToken(second.endpoint)).toEqual(token);
    } finally {
      await second.close();
    }
  });

  it('keeps nothing without a data dir', async () => {
    const first = await startDynaliteThread();
    await putToken(first.endpoint);
    await first.close();

    const second = await startDynaliteThread();
    try {
      expect(await readToken(second.endpoint)).toBeUndefined();
    } finally {
      await second.close();
    }
  });

  it('stops a second store on a data dir whose LevelDB the first holds, and the first keeps it', async () => {
    // The runtime's data-dir lock keeps a second runtime away; this is the store's own guard.
    const dataDir = mkdtempSync(join(tmpdir(), 'registrar-dynalite-thread-'));
    dirs.push(dataDir);
    const holder = await startDynaliteThread({ dataDir });
    try {
      await putToken(holder.endpoint);
      const second = await startDynaliteThread({ dataDir });
      await expect(readToken(second.endpoint)).rejects.toThrow();
      expect((await second.failed).message).toMatch(/stopped unexpectedly/);
      await second.close();
      expect(await readToken(holder.endpoint)).toEqual(token);
    } finally {
      await holder.close();
    }
  });

  it('reports a thread that stops unasked, with the store it was and what to expect', async () => {
    const store = await startDynaliteThread();
    await store.thread.terminate();
    const error = await store.failed;
    expect(error.message).toMatch(
      /^the local DynamoDB store \(dynalite, http:\/\/127\.0\.0\.1:\d+\) stopped unexpectedly .*stops$/,
    );
    await store.close(); // nothing left to close, and it does not hang
  });

  it('reports nothing when it is closed as asked', async () => {
    const store = await startDynaliteThread();
    await store.close();
    const settled = await Promise.race([
      store.failed.then(() => 'failed'),
      new Promise((resolve) => setTimeout(() => resolve('quiet'), 100)),
    ]);
    expect(settled).toBe('quiet');
  });
});
