import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { GROUP_ANNOTATIONS } from '../../lib/domain/tenant-limits.ts';
import { startTenantRuntime, type TenantRuntime } from '../fixtures/tenant-runtime.ts';
import { refusedUpgrade, type TestClient } from '../fixtures/websocket-client.ts';

/**
 * Networks and address ranges an operator allows a namespace, a join token or a group, played
 * by a token holder that names a network or an address it was not given: real WebSocket
 * clients against the local runtime, limits set with the CLI (settings cache 1 ms here).
 */
let tenants: TenantRuntime;
const open: TestClient[] = [];

beforeAll(async () => {
  tenants = await startTenantRuntime(
    { shop: ['web'], free: ['web'], ranged: ['web'], team: ['web'], shown: ['web'] },
    { functionEnv: { REGISTRAR_NAMESPACE_SETTINGS_CACHE: '1ms' } },
  );
});
afterAll(async () => {
  await tenants?.close();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => undefined)));
});

async function connect(namespace: string, ip: string, query = '', headers?: object) {
  const request = tenants.request(namespace, 'web', ip, query);
  const { openClient } = await import('../fixtures/websocket-client.ts');
  const client = await openClient(request.url, { ...request.headers, ...headers });
  open.push(client);
  return client;
}

async function refusal(namespace: string, ip: string, query = '', headers?: object) {
  const request = tenants.request(namespace, 'web', ip, query);
  const refused = await refusedUpgrade(request.url, { ...request.headers, ...headers });
  return { status: refused.statusCode, ...JSON.parse(refused.body).error };
}

async function cli(...args: string[]) {
  const run = await tenants.cli(args);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return run.stdout;
}

const entry = (namespace: string, name: string) => tenants.store.getEntry({ namespace, name });

describe('networks a namespace may name', () => {
  it('lets an agent name any network by default, as Istio does', async () => {
    await connect('free', '10.5.0.1', '&network=anything-goes');
    expect((await entry('free', 'web-10.5.0.1-anything-goes'))?.entry.spec.network).toBe(
      'anything-goes',
    );
  });

  it('refuses another network with 403 naming it and how to allow it, and writes nothing', async () => {
    await cli('namespace', 'set', '-n', 'shop', '--networks', 'vpc-shop');

    const refused = await refusal('shop', '10.5.1.1', '&network=vpc-prod');

    expect(refused).toEqual({
      status: 403,
      code: 'NetworkNotAllowed',
      message:
        "network 'vpc-prod' is not allowed for namespace 'shop' (allowed: vpc-shop); connect with ?network=<one of them>, or allow it with: registrar namespace set -n shop --networks vpc-shop,vpc-prod",
    });
    expect(await entry('shop', 'web-10.5.1.1-vpc-prod')).toBeUndefined();
  });

  it('accepts an allowed network, and refuses no network unless <none> is allowed', async () => {
    await cli('namespace', 'set', '-n', 'shop', '--networks', 'vpc-shop');
    await connect('shop', '10.5.1.2', '&network=vpc-shop');

    const none = await refusal('shop', '10.5.1.3');
    expect(none).toMatchObject({ status: 403, code: 'NetworkNotAllowed' });
    expect(none.message).toMatch(/^no network \(an entry without spec.network\) is not allowed/);

    await cli('namespace', 'set', '-n', 'shop', '--networks', 'vpc-shop,<none>');
    await connect('shop', '10.5.1.3');
    await cli('namespace', 'set', '-n', 'shop', '--networks', 'any');
    await connect('shop', '10.5.1.4', '&network=elsewhere');
  });

  it("holds a join token to its own networks, on top of its namespace's", async () => {
    const created = await tenants.cli(['token', 'create', '-n', 'team', '--networks', 'vpc-a']);
    expect(created.code).toBe(0);
    const token = { Authorization: `Bearer ${created.stdout.trim()}` };
    const id = created.stdout.trim().split('.')[1];

    await connect('team', '10.5.2.1', '&network=vpc-a', token);
    const refused = await refusal('team', '10.5.2.2', '&network=vpc-b', token);

    expect(refused).toMatchObject({ status: 403, code: 'NetworkNotAllowed' });
    expect(refused.message).toContain(`network 'vpc-b' is not allowed for join token ${id}`);
    expect(refused.message).toContain(
      'allow it with: registrar token create -n team --networks vpc-a,vpc-b',
    );
    // The namespace's own token (no networks) is not held to the other token's.
    await connect('team', '10.5.2.2', '&network=vpc-b');
    const listed = await cli('token', 'list', '-n', 'team', '-o', 'wide');
    expect(listed.split('\n')[0]).toMatch(/\sNETWORKS$/);
    expect(listed).toMatch(new RegExp(`^${id}\\s.*\\svpc-a\n`, 'm'));
  });
});

describe('address ranges', () => {
  it('refuses an address outside the namespace ranges with 403 naming it and the ranges', async () => {
    await cli('namespace', 'set', '-n', 'ranged', '--address-ranges', '10.20.0.0/16,fd00:20::/64');
    await connect('ranged', '10.20.1.5');
    await connect('ranged', 'fd00:20::5');

    const refused = await refusal('ranged', '10.30.0.1');

    expect(refused).toEqual({
      status: 403,
      code: 'AddressNotAllowed',
      message:
        "address 10.30.0.1 is outside the address ranges allowed in namespace 'ranged' (10.20.0.0/16, fd00:20::/64); register from an address in them, or allow it with: registrar namespace set -n ranged --address-ranges 10.20.0.0/16,fd00:20::/64,<cidr>",
    });
    expect(await entry('ranged', 'web-10.30.0.1')).toBeUndefined();
  });

  it('judges every spelling of an address as the address: an IPv4-mapped IPv6 one is its IPv4', async () => {
    await cli('namespace', 'set', '-n', 'ranged', '--address-ranges', '10.20.0.0/16');

    const mapped = await refusal('ranged', encodeURIComponent('::ffff:10.30.0.1'));
    expect(mapped).toMatchObject({ status: 403, code: 'AddressNotAllowed' });
    expect(mapped.message).toMatch(/^address 10\.30\.0\.1 is outside/);
    await connect('ranged', encodeURIComponent('::ffff:10.20.0.9'));
    expect((await entry('ranged', 'web-10.20.0.9'))?.entry.spec.address).toBe('10.20.0.9');
  });

  it("also holds a group's entries to the ranges of its annotation", async () => {
    await cli('namespace', 'set', '-n', 'ranged', '--address-ranges', '10.20.0.0/16');
    await tenants.store.applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: {
        name: 'narrow',
        namespace: 'ranged',
        annotations: { [GROUP_ANNOTATIONS.addressRanges]: '10.20.5.0/24' },
      },
      spec: { template: { ports: { http: 8080 } } },
    });
    const request = (ip: string) => tenants.request('ranged', 'narrow', ip);

    const outside = await refusedUpgrade(request('10.20.1.6').url, request('10.20.1.6').headers);

    expect(outside.statusCode).toBe(403);
    expect(JSON.parse(outside.body).error.message).toBe(
      `address 10.20.1.6 is outside the address ranges of WorkloadGroup ranged/narrow (10.20.5.0/24, annotation ${GROUP_ANNOTATIONS.addressRanges}); register from an address in them, or change the annotation and apply the group`,
    );
    open.push(await tenants.connect('ranged', 'narrow', '10.20.5.6'));
  });
});

describe('group address ranges at apply', () => {
  it('refuses an annotation that is not a list of CIDRs, naming the field, and writes nothing', async () => {
    const { captureCli } = await import('../fixtures/cli-run.ts');
    const bad = await captureCli(['apply', '-f', '-'], {
      env: {
        REGISTRAR_DYNAMODB_ENDPOINT: tenants.runtime.dynamoDbEndpoint,
        REGISTRAR_TABLE: tenants.runtime.tableName,
      },
      stdin: [
        'apiVersion: networking.istio.io/v1',
        'kind: WorkloadGroup',
        'metadata:',
        '  name: wide',
        '  namespace: ranged',
        '  annotations:',
        `    ${GROUP_ANNOTATIONS.addressRanges}: "10.20.0.0/16,10.1.0.1/16"`,
        'spec:',
        '  template:',
        '    ports:',
        '      http: 8080',
      ].join('\n'),
    });

    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(
      `error: document 1 (WorkloadGroup wide): metadata.annotations["${GROUP_ANNOTATIONS.addressRanges}"]: must be comma-separated CIDRs (10.20.0.0/16,fd00::/64): '10.1.0.1/16' has host bits set; did you mean 10.1.0.0/16?\nnothing was written\n`,
    );
    expect(await tenants.store.getGroup({ namespace: 'ranged', name: 'wide' })).toBeUndefined();
  });
});

describe('registrar namespace', () => {
  it('shows each namespace with its connected entries, its limits and the defaults', async () => {
    await cli('namespace', 'set', '-n', 'shown', '--address-ranges', '10.20.0.0/16');
    await connect('shown', '10.20.7.1');

    const shown = await cli('namespace', 'get', '-n', 'shown');

    expect(shown).toBe(
      'NAMESPACE   CONNECTED   MAX-ENTRIES        CONNECT-RATE       NETWORKS   ADDRESS-RANGES   HEARTBEAT-CHECKS\n' +
        'shown       1           200000 (default)   1000/s (default)   <any>      10.20.0.0/16     1200000/m (default)\n',
    );
  });

  it('refuses a bad value naming the option and the value, and writes nothing', async () => {
    const bad = await tenants.cli([
      'namespace',
      'set',
      '-n',
      'team',
      '--address-ranges',
      '10.0.0.1/8',
    ]);

    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      "option '--address-ranges <cidrs>' argument '10.0.0.1/8' is invalid. '10.0.0.1/8' has host bits set; did you mean 10.0.0.0/8?",
    );
    const shown = await cli('namespace', 'get', '-n', 'team', '-o', 'json');
    expect(JSON.parse(shown).items[0].defaults).toEqual([
      'maxEntries',
      'connectRate',
      'networks',
      'addressRanges',
      'heartbeatChecks',
    ]);
  });
});
