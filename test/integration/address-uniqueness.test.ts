import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { captureCli } from '../fixtures/cli-run.ts';
import { startTenantRuntime, type TenantRuntime, until } from '../fixtures/tenant-runtime.ts';
import { refusedUpgrade, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * An address is unique within a network, across groups and namespaces (token mode: the
 * address is the agent's word, so the first live claim wins). Real WebSocket clients against
 * the local runtime; the registry read back from its dynalite.
 */

let tenants: TenantRuntime;

beforeAll(async () => {
  tenants = await startTenantRuntime({ shop: ['g1', 'g2'], evil: ['g1'] });
});

afterAll(async () => {
  await tenants?.close();
});

const network = (name?: string) => (name ? `&network=${name}` : '');

function connect(namespace: string, name: string, ip: string, net?: string) {
  return tenants.connect(namespace, name, ip, network(net));
}

async function refusal(namespace: string, name: string, ip: string, net?: string) {
  const { url, headers } = tenants.request(namespace, name, ip, network(net));
  const refused = await refusedUpgrade(url, headers);
  return {
    status: refused.statusCode,
    error: (JSON.parse(refused.body) as { error: { code: string; message: string } }).error,
  };
}

const entry = (namespace: string, name: string) => tenants.store.getEntry({ namespace, name });

const closeAll = (clients: TestClient[]) =>
  Promise.all(clients.map((client) => client.close(1000, 'test over')));

describe('an address is unique within a network', () => {
  it('replaces the entry of a VM that stopped in one group and came straight back in another', async () => {
    const first = await connect('shop', 'g1', '10.9.0.1');
    await first.close(1000, 'agent closing');
    await until(async () => (await entry('shop', 'g1-10.9.0.1'))?.connection?.disconnectedAt);

    const moved = await connect('shop', 'g2', '10.9.0.1');

    // At once, not after g1's grace period: one address, one entry.
    expect(await entry('shop', 'g1-10.9.0.1')).toBeUndefined();
    expect((await entry('shop', 'g2-10.9.0.1'))?.connection?.connectedAt).toBeDefined();
    await closeAll([moved]);
  });

  it("refuses (409) a second live claim of a connected VM's address, naming the entry, and writes nothing", async () => {
    const holder = await connect('shop', 'g1', '10.9.0.2');

    const refused = await refusal('shop', 'g2', '10.9.0.2');

    expect(refused.status).toBe(409);
    expect(refused.error.code).toBe('AddressInUse');
    expect(refused.error.message).toBe(
      "address 10.9.0.2 without a network is held by WorkloadEntry shop/g1-10.9.0.2, whose VM is connected; two VMs cannot share an address in one network: check this agent's ip and network; if they are right, the connected VM holding the entry has this VM's address and its own agent must be fixed (its entry leaves when that VM stops)",
    );
    expect(await entry('shop', 'g2-10.9.0.2')).toBeUndefined();
    const kept = await entry('shop', 'g1-10.9.0.2');
    expect(kept?.connection?.connectedAt).toBeDefined();
    // The holder shows the refused claim in describe we's events; get we's ADDRESS column stays
    // the address alone, so scripts that read the columns keep working (kubectl keeps such
    // notes in Events).
    expect(kept?.addressConflict).toEqual({ at: expect.any(Number), claimant: 'shop/g2-10.9.0.2' });
    const env = {
      REGISTRAR_DYNAMODB_ENDPOINT: tenants.runtime.dynamoDbEndpoint,
      REGISTRAR_TABLE: tenants.runtime.tableName,
    };
    const listed = await captureCli(['get', 'we', 'g1-10.9.0.2', '-n', 'shop'], { env });
    expect(listed.stdout).toMatch(/^g1-10\.9\.0\.2\s+10\.9\.0\.2\s+True\s+/m);
    expect(listed.stdout).not.toContain('refused');
    // Repeated refusals within a minute write nothing more on the holder.
    await refusal('evil', 'g1', '10.9.0.2');
    expect((await entry('shop', 'g1-10.9.0.2'))?.addressConflict).toEqual(kept?.addressConflict);
    const described = await captureCli(['describe', 'we', 'g1-10.9.0.2', '-n', 'shop'], { env });
    expect(described.stdout).toMatch(
      /Warning\s+AddressInUse\s+.*a connect that would register shop\/g2-10\.9\.0\.2 claimed this entry's address and was refused/,
    );
    await closeAll([holder]);
  });

  it('lets the same address live in another network', async () => {
    const a = await connect('shop', 'g1', '10.9.0.3', 'net-a');
    const b = await connect('shop', 'g2', '10.9.0.3', 'net-b');
    expect(await entry('shop', 'g1-10.9.0.3-net-a')).toBeDefined();
    expect(await entry('shop', 'g2-10.9.0.3-net-b')).toBeDefined();
    await closeAll([a, b]);
  });

  it("keeps the claim across a VM's own rotations", async () => {
    const old = await connect('shop', 'g1', '10.9.0.4');
    const rotated = await connect('shop', 'g1', '10.9.0.4');
    await old.close(1000, 'rotated');
    await until(async () =>
      (await entry('shop', 'g1-10.9.0.4'))?.connection?.connectionIds?.length === 1
        ? true
        : undefined,
    );
    expect((await entry('shop', 'g1-10.9.0.4'))?.connection?.connectedAt).toBeDefined();
    await closeAll([rotated]);
  });

  it("never lets another namespace take, or learn the name of, a live VM's entry", async () => {
    const holder = await connect('shop', 'g1', '10.9.0.5');

    const refused = await refusal('evil', 'g1', '10.9.0.5');

    expect(refused.status).toBe(409);
    expect(refused.error.message).toContain('is held by a WorkloadEntry of another namespace');
    expect(refused.error.message).not.toContain('shop');
    expect(await entry('evil', 'g1-10.9.0.5')).toBeUndefined();
    expect((await entry('shop', 'g1-10.9.0.5'))?.connection?.connectedAt).toBeDefined();
    await closeAll([holder]);
  });

  it("never lets another namespace delete a disconnected VM's entry by claiming its address", async () => {
    const holder = await connect('shop', 'g1', '10.9.0.6');
    holder.socket.terminate();
    await until(async () => (await entry('shop', 'g1-10.9.0.6'))?.connection?.disconnectedAt);

    const refused = await refusal('evil', 'g1', '10.9.0.6');

    expect(refused.status).toBe(409);
    expect(refused.error.message).toContain('until its grace period ends');
    expect(await entry('shop', 'g1-10.9.0.6')).toBeDefined();
  });

  it("keeps the holder's own events through two bursts of 30 connects from another namespace", async () => {
    // The holder's story: registered, its VM went away, and came back.
    const first = await connect('shop', 'g1', '10.9.0.8');
    await first.close(1000, 'agent closing');
    await until(async () => (await entry('shop', 'g1-10.9.0.8'))?.connection?.disconnectedAt);
    const back = await connect('shop', 'g1', '10.9.0.8');
    const own = (await entry('shop', 'g1-10.9.0.8'))?.events?.map((event) => event.reason);
    expect(own).toEqual(['Disconnected', 'Reconnected']);

    // Another namespace claims the address, 30 connects at once, twice.
    for (let round = 0; round < 2; round++) {
      const refused = await Promise.all(
        Array.from({ length: 30 }, () => refusal('evil', 'g1', '10.9.0.8')),
      );
      expect(refused.map((r) => r.status)).toEqual(Array(30).fill(409));
    }

    const held = await entry('shop', 'g1-10.9.0.8');
    expect(held?.events?.map((event) => event.reason)).toEqual(own);
    expect(held?.addressConflict?.claimant).toBe('evil/g1-10.9.0.8');
    const described = await tenants.cli(['describe', 'we', 'g1-10.9.0.8', '-n', 'shop']);
    expect(described.stdout.match(/AddressInUse/g)).toHaveLength(1);
    expect(described.stdout).toMatch(/Disconnected[\s\S]*Reconnected/);
    await closeAll([back]);
  });

  it('takes over the claim of an entry deleted by hand', async () => {
    const first = await connect('shop', 'g1', '10.9.0.7');
    await first.close(1000, 'agent closing');
    await tenants.store.deleteEntry({ namespace: 'shop', name: 'g1-10.9.0.7' });

    const next = await connect('evil', 'g1', '10.9.0.7');
    expect(await entry('evil', 'g1-10.9.0.7')).toBeDefined();
    await closeAll([next]);
  });
});
