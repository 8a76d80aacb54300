import type { Metrics } from '@aws-lambda-powertools/metrics';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { METRIC, metrics } from '../../lib/observability.ts';
import { addressKey } from '../../lib/store/dynamodb-address-claims.ts';
import { startTenantRuntime, type TenantRuntime, until } from '../fixtures/tenant-runtime.ts';
import { refusedUpgrade, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * Quotas per namespace, played by a tenant that connects more VMs, or faster, than its
 * operator allows: real WebSocket clients against the local runtime (gateway, authorizer,
 * handlers, dynalite), quotas set with the CLI. The settings cache is 1 ms here so that a
 * `namespace set` takes effect at the next connect (30 s by default).
 */
let tenants: TenantRuntime;
const open: TestClient[] = [];

beforeAll(async () => {
  tenants = await startTenantRuntime(
    // One namespace per story: a namespace at its quota is re-counted at most once a second.
    {
      shop: ['web'],
      rotating: ['web'],
      leaving: ['web'],
      small: ['web'],
      other: ['web'],
      fast: ['web'],
      evil: ['web'],
    },
    { functionEnv: { REGISTRAR_NAMESPACE_SETTINGS_CACHE: '1ms' } },
  );
});
afterAll(async () => {
  await tenants?.close();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
});

/** What the functions counted as refused, by reason (`Refused{MaxEntriesExceeded}`). */
let refusals: string[] = [];
beforeEach(() => {
  refusals = [];
  const single = metrics.singleMetric.bind(metrics);
  vi.spyOn(metrics, 'singleMetric').mockImplementation(() => {
    const metric = single();
    let reason = '';
    return {
      addDimension: (_name: string, value: string) => {
        reason = value;
        return metric;
      },
      addMetric: (name: string) => {
        if (name === METRIC.refused) refusals.push(reason);
        return metric;
      },
    } as unknown as Metrics;
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

async function connect(namespace: string, ip: string, query = ''): Promise<TestClient> {
  const client = await tenants.connect(namespace, 'web', ip, query);
  open.push(client);
  return client;
}

function refused(namespace: string, ip: string, query = '') {
  const { url, headers } = tenants.request(namespace, 'web', ip, query);
  return refusedUpgrade(url, headers);
}

async function cli(...args: string[]) {
  const run = await tenants.cli(args);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return run.stdout;
}

describe('max-entries', () => {
  it('refuses a VM over the quota with 429 naming it and how to raise it, counts it, and writes nothing', async () => {
    await cli('namespace', 'set', '-n', 'shop', '--max-entries', '2');
    await connect('shop', '10.1.0.1');
    await connect('shop', '10.1.0.2');

    const refusal = await refused('shop', '10.1.0.3');

    expect(refusal.statusCode).toBe(429);
    expect(JSON.parse(refusal.body).error).toEqual({
      code: 'MaxEntriesExceeded',
      message:
        "namespace 'shop' is at its quota max-entries 2: 2 entries are connected; stop VMs of this namespace, or raise it with: registrar namespace set -n shop --max-entries <n>",
    });
    expect(refusals).toContain('MaxEntriesExceeded');
    expect(await tenants.store.getEntry({ namespace: 'shop', name: 'web-10.1.0.3' })).toBe(
      undefined,
    );
    expect(await rawItem(addressKey({ network: '', address: '10.1.0.3' }))).toBeUndefined();
  });

  it('still lets a VM at the quota reconnect (make before break), and a late disconnect of its old connection makes no room', async () => {
    await cli('namespace', 'set', '-n', 'rotating', '--max-entries', '2');
    const old = await connect('rotating', '10.1.1.1');
    await connect('rotating', '10.1.1.2');

    // The rotation's new connection joins the connected entry: nothing is added to the count.
    await connect('rotating', '10.1.1.1');
    // The old connection's $disconnect comes after: the entry stays connected, still counted.
    await old.close();
    await until(async () => {
      const record = await tenants.store.getEntry({ namespace: 'rotating', name: 'web-10.1.1.1' });
      return record?.connection?.connectionIds.length === 1;
    });

    expect((await refused('rotating', '10.1.1.4')).statusCode).toBe(429);
  });

  it('makes room when a VM leaves', async () => {
    await cli('namespace', 'set', '-n', 'leaving', '--max-entries', '2');
    const a = await connect('leaving', '10.1.2.1');
    await connect('leaving', '10.1.2.2');
    expect((await refused('leaving', '10.1.2.5')).statusCode).toBe(429);

    await a.close();

    // Once the departure is counted, and within the 1 s recheck of a namespace at its quota.
    const client = await until(
      async () => await tenants.connect('leaving', 'web', '10.1.2.5').catch(() => undefined),
    );
    open.push(client);
  });

  it("never counts another namespace's VMs", async () => {
    await cli('namespace', 'set', '-n', 'small', '--max-entries', '1');
    await connect('other', '10.2.0.1');
    await connect('other', '10.2.0.2');
    await connect('small', '10.1.3.1');

    expect((await refused('small', '10.1.3.2')).statusCode).toBe(429);
    await connect('other', '10.2.0.3');
  });
});

describe('connect-rate', () => {
  it('admits at most the window budget and refuses the rest with 429 naming the quota, writing nothing', async () => {
    // 3/m: one connect per 20 s window. A burst of four within a few seconds spans at most two
    // windows, so at most two are let in and at least two refused.
    await cli('namespace', 'set', '-n', 'fast', '--connect-rate', '3/m');
    const outcomes: (number | 'open')[] = [];
    for (const ip of ['10.3.0.1', '10.3.0.2', '10.3.0.3', '10.3.0.4']) {
      const { url, headers } = tenants.request('fast', 'web', ip);
      const client = await tenants.connect('fast', 'web', ip).catch(() => undefined);
      if (client) {
        open.push(client);
        outcomes.push('open');
        continue;
      }
      const refusal = await refusedUpgrade(url, headers);
      expect(refusal.statusCode).toBe(429);
      expect(JSON.parse(refusal.body).error.message).toBe(
        "namespace 'fast' is over its quota connect-rate 0.05/s; retry later (agents back off on their own), or raise it with: registrar namespace set -n fast --connect-rate <n>/s",
      );
      expect(await tenants.store.getEntry({ namespace: 'fast', name: `web-${ip}` })).toBe(
        undefined,
      );
      outcomes.push(429);
    }

    expect(outcomes.filter((o) => o === 'open').length).toBeGreaterThanOrEqual(1);
    expect(outcomes.filter((o) => o === 'open').length).toBeLessThanOrEqual(2);
    expect(refusals).toContain('ConnectRateExceeded');
    await cli('namespace', 'reset', '-n', 'fast');
  });

  it('uses the rate for a connect refused after it was counted (a 409): an attempt is an attempt', async () => {
    // `other` holds 10.9.0.1; `evil` connects to the same address (409) with a budget of one.
    await connect('other', '10.9.0.1');
    await cli('namespace', 'set', '-n', 'evil', '--connect-rate', '1/m');
    const first = await refused('evil', '10.9.0.1');
    // The second attempt comes within the same 60 s window, unless the first was its last
    // moment: then the second is the 409 again and a third is the 429.
    let next = await refused('evil', '10.9.0.1');
    if (next.statusCode === 409) next = await refused('evil', '10.9.0.1');

    expect(first.statusCode).toBe(409);
    expect(next.statusCode).toBe(429);
    await cli('namespace', 'reset', '-n', 'evil');
  });
});

async function rawItem(key: Record<string, string>) {
  const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
  const { createDocumentClient } = await import('../../lib/store/dynamodb-client.ts');
  const client = createDocumentClient({
    region: tenants.runtime.region,
    endpoint: tenants.runtime.dynamoDbEndpoint,
  });
  try {
    const { Item } = await client.send(
      new GetCommand({ TableName: tenants.runtime.tableName, Key: key, ConsistentRead: true }),
    );
    return Item;
  } finally {
    client.destroy();
  }
}
