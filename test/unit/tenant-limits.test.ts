import { describe, expect, it } from 'vitest';
import { canonicalAddress } from '../../lib/domain/address.ts';
import { cidrContains, parseCidr, parseCidrList } from '../../lib/domain/cidr.ts';
import { rateWindow, shardCapacity } from '../../lib/domain/connect-rate.ts';
import type { EntryRecord } from '../../lib/domain/entry-record.ts';
import { parseNetworkName, parseRate } from '../../lib/domain/namespace-settings.ts';
import {
  addressBounds,
  addressRefusal,
  GROUP_ANNOTATIONS,
  namespaceNetworkGrant,
  networkRefusal,
} from '../../lib/domain/tenant-limits.ts';
import { endpointRanges, filterEndpoints } from '../../lib/projection/endpoint-ranges.ts';
import { cachedSettingsListing } from '../../lib/projection/settings-listing.ts';
import { NamespaceLimits } from '../../lib/registration/namespace-limits.ts';

const cidr = (text: string) => {
  const parsed = parseCidr(text);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.cidr;
};

describe('CIDRs', () => {
  it('holds the addresses of its range and no other, in both families', () => {
    expect(cidrContains(cidr('10.20.0.0/16'), '10.20.255.1')).toBe(true);
    expect(cidrContains(cidr('10.20.0.0/16'), '10.21.0.1')).toBe(false);
    expect(cidrContains(cidr('0.0.0.0/0'), '203.0.113.9')).toBe(true);
    expect(cidrContains(cidr('fd00:20::/64'), 'fd00:20::abcd')).toBe(true);
    expect(cidrContains(cidr('fd00:20::/64'), 'fd00:21::1')).toBe(false);
    // Families never mix: an IPv4 range holds no IPv6 address.
    expect(cidrContains(cidr('10.0.0.0/8'), 'fd00::1')).toBe(false);
  });

  it('judges the canonical address: an IPv4-mapped IPv6 spelling is its IPv4 address', () => {
    const canonical = canonicalAddress('::ffff:10.20.0.9');
    expect(canonical).toEqual({ ok: true, address: '10.20.0.9' });
    expect(cidrContains(cidr('10.20.0.0/16'), '10.20.0.9')).toBe(true);
  });

  it('refuses what is not a range, naming the problem', () => {
    expect(parseCidr('10.0.0.1/8')).toEqual({
      ok: false,
      problem: 'has host bits set; did you mean 10.0.0.0/8?',
    });
    expect(parseCidr('10.0.0.0')).toMatchObject({ ok: false });
    expect(parseCidr('10.0.0.0/33')).toEqual({
      ok: false,
      problem: "prefix length must be 0 to 32, got '33'",
    });
    expect(parseCidrList('10.0.0.0/8, nope/3')).toMatchObject({ ok: false, item: 'nope/3' });
    expect(parseCidr('FD00:0:0::/48')).toMatchObject({ ok: true, cidr: { text: 'fd00::/48' } });
  });
});

describe('connect-rate windows', () => {
  it('splits a window budget over at most 8 shards, exactly', () => {
    const window = rateWindow(50, 1_000_500);
    expect(window).toEqual({ start: 1_000_000, lengthMs: 1000, budget: 50, shards: 8 });
    const capacities = Array.from({ length: 8 }, (_, shard) => shardCapacity(window, shard));
    expect(capacities.reduce((a, b) => a + b)).toBe(50);
    expect(Math.max(...capacities) - Math.min(...capacities)).toBeLessThanOrEqual(1);
  });

  it('gives a slow rate one shard and a window that admits one connect', () => {
    expect(rateWindow(0.1, 25_000)).toEqual({
      start: 20_000,
      lengthMs: 10_000,
      budget: 1,
      shards: 1,
    });
    expect(rateWindow(6, 0)).toMatchObject({ budget: 6, shards: 1 });
  });

  it('reads rates as operators write them', () => {
    expect(parseRate('50/s')).toBe(50);
    expect(parseRate('3000/m')).toBe(50);
    expect(parseRate('0.5')).toBe(0.5);
    expect(parseRate('0/s')).toBeUndefined();
    expect(parseRate('fast')).toBeUndefined();
    expect(parseNetworkName('<none>')).toBe('');
    expect(parseNetworkName('vpc,b')).toBeUndefined();
  });
});

describe('networks', () => {
  const shop = { namespace: 'shop', networks: ['vpc-shop', ''] };

  it('lets through a network every grant allows, and names the first that does not', () => {
    expect(networkRefusal('vpc-shop', namespaceNetworkGrant(shop))).toBeUndefined();
    expect(networkRefusal('', namespaceNetworkGrant(shop))).toBeUndefined();
    const refused = networkRefusal('vpc-prod', [
      ...namespaceNetworkGrant(shop),
      { who: 'join token t1', networks: ['vpc-prod'], allow: () => 'x' },
    ]);
    expect(refused?.message).toBe(
      "network 'vpc-prod' is not allowed for namespace 'shop' (allowed: vpc-shop, <none>); connect with ?network=<one of them>, or allow it with: registrar namespace set -n shop --networks vpc-shop,<none>,vpc-prod",
    );
    expect(refused?.statusCode).toBe(403);
  });

  it('restricts nothing without settings: Istio lets a proxy name its network', () => {
    expect(networkRefusal('anything', namespaceNetworkGrant(undefined))).toBeUndefined();
    expect(
      networkRefusal('anything', namespaceNetworkGrant({ namespace: 'shop' })),
    ).toBeUndefined();
  });
});

describe('address bounds', () => {
  const group = (annotation?: string) => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup' as const,
    metadata: {
      name: 'web',
      namespace: 'shop',
      ...(annotation === undefined
        ? {}
        : { annotations: { [GROUP_ANNOTATIONS.addressRanges]: annotation } }),
    },
    spec: { template: {} },
  });

  it('refuses every address of a group whose annotation does not parse (fails closed)', () => {
    const bounds = addressBounds(undefined, group('10.0.0.0/8,bad'));
    expect(addressRefusal('10.1.1.1', bounds)?.message).toBe(
      `address 10.1.1.1 cannot be checked: WorkloadGroup shop/web annotation ${GROUP_ANNOTATIONS.addressRanges}: 'bad' must be a CIDR such as 10.0.0.0/16 or fd00::/64; fix the annotation and apply the group again`,
    );
  });

  it('treats an empty list as allowing nothing, never as allowing everything', () => {
    const bounds = addressBounds({ namespace: 'shop', addressRanges: [] }, group());
    expect(addressRefusal('10.1.1.1', bounds)?.message).toMatch(
      /allowed in namespace 'shop' \(none\)/,
    );
  });
});

describe('live-count cache', () => {
  function limitsReading(counts: number[]) {
    let reads = 0;
    const limits = new NamespaceLimits({
      settings: { getSettings: async () => undefined },
      usage: {
        connectedEntries: async () => {
          reads += 1;
          return counts.shift() ?? 0;
        },
      },
      rate: { admit: async () => true },
      settingsCacheMs: 30_000,
    });
    return { limits, reads: () => reads };
  }

  it('trusts a count for as long as the connect rate could not fill the headroom', async () => {
    const { limits, reads } = limitsReading([900, 990]);
    const quota = { maxEntries: 1000, connectRate: 10 };
    // 100 below the quota at 10/s (twice for a window edge): good for 5 s.
    expect(await limits.connected('shop', 0, quota)).toBe(900);
    expect(await limits.connected('shop', 4_999, quota)).toBe(900);
    expect(reads()).toBe(1);
    expect(await limits.connected('shop', 5_000, quota)).toBe(990);
    // 10 below: half a second.
    expect(await limits.connected('shop', 5_499, quota)).toBe(990);
    expect(reads()).toBe(2);
  });

  it('reads a namespace at its quota again within a second, so a departure makes room', async () => {
    const { limits, reads } = limitsReading([1000, 999]);
    const quota = { maxEntries: 1000, connectRate: 10 };
    expect(await limits.connected('shop', 0, quota)).toBe(1000);
    expect(await limits.connected('shop', 999, quota)).toBe(1000);
    expect(await limits.connected('shop', 1000, quota)).toBe(999);
    expect(reads()).toBe(2);
  });
});

describe('reads shared by connects that miss the cache together', () => {
  function limitsWithGates() {
    const calls = { settings: 0, usage: 0 };
    let answerSettings: (fail?: Error) => void = () => {};
    let answerUsage: (count: number) => void = () => {};
    const limits = new NamespaceLimits({
      settings: {
        getSettings: () => {
          calls.settings += 1;
          return new Promise((resolve, reject) => {
            answerSettings = (fail) =>
              fail ? reject(fail) : resolve({ namespace: 'shop', maxEntries: 5 });
          });
        },
      },
      usage: {
        connectedEntries: () => {
          calls.usage += 1;
          return new Promise((resolve) => {
            answerUsage = resolve;
          });
        },
      },
      rate: { admit: async () => true },
      settingsCacheMs: 30_000,
    });
    return {
      limits,
      calls,
      answerSettings: (fail?: Error) => answerSettings(fail),
      answerUsage: (count: number) => answerUsage(count),
    };
  }

  it('sends one settings read and one live count for a burst of connects of a new namespace', async () => {
    const { limits, calls, answerSettings, answerUsage } = limitsWithGates();
    const quota = { maxEntries: 1000, connectRate: 10 };
    const settings = Array.from({ length: 50 }, () => limits.settings('shop', 0));
    const counts = Array.from({ length: 50 }, () => limits.connected('shop', 0, quota));
    expect(calls).toEqual({ settings: 1, usage: 1 });
    answerSettings();
    answerUsage(7);
    expect(new Set(await Promise.all(settings)).size).toBe(1);
    expect(await Promise.all(counts)).toEqual(Array(50).fill(7));
    // Cached afterwards, as before; another namespace reads its own.
    await limits.settings('shop', 1);
    expect(calls.settings).toBe(1);
    const other = limits.settings('lab', 1);
    expect(calls.settings).toBe(2);
    answerSettings();
    await other;
  });

  it('gives a failed read to its waiters and caches nothing: the next connect reads again', async () => {
    const { limits, calls, answerSettings } = limitsWithGates();
    const first = limits.settings('shop', 0);
    const second = limits.settings('shop', 0);
    answerSettings(new Error('throttled'));
    await expect(first).rejects.toThrow('throttled');
    await expect(second).rejects.toThrow('throttled');
    const retry = limits.settings('shop', 1);
    expect(calls.settings).toBe(2);
    answerSettings();
    expect(await retry).toEqual({ namespace: 'shop', maxEntries: 5 });
  });
});

describe('endpoint ranges (projector)', () => {
  const record = (namespace: string, name: string, address: string) =>
    ({ entry: { metadata: { namespace, name }, spec: { address } }, revision: 1 }) as EntryRecord;

  it("refuses the cluster's ranges, unreachable addresses and out-of-namespace-range ones, naming each", () => {
    const ranges = endpointRanges(
      [cidr('10.96.0.0/12')],
      [{ namespace: 'shop', addressRanges: ['10.20.0.0/16'] }],
    );
    const { allowed, refused } = filterEndpoints(
      [
        record('shop', 'ok', '10.20.0.5'),
        record('shop', 'api', '10.96.0.1'),
        record('shop', 'far', '10.30.0.5'),
        record('other', 'imds', '169.254.169.254'),
        record('other', 'nat64', '64:ff9b::a9fe:a9fe'),
        record('other', 'dns', 'vm.example.com'),
        record('shop', 'dns', 'vm.example.com'),
      ],
      ranges,
    );
    expect(allowed.map((r) => r.entry.metadata.name)).toEqual(['ok', 'dns']);
    expect(refused.map((r) => [r.namespace, r.name, r.message])).toEqual([
      [
        'shop',
        'api',
        "address 10.96.0.1 is in the cluster's range 10.96.0.0/12 (pods or Services): an entry must not stand in for them",
      ],
      ['shop', 'far', "address 10.30.0.5 is outside its namespace's address ranges (10.20.0.0/16)"],
      [
        'other',
        'imds',
        expect.stringMatching(/^address 169\.254\.169\.254 is a link-local address/),
      ],
      ['other', 'nat64', expect.stringMatching(/^address 64:ff9b::a9fe:a9fe is /)],
      [
        'shop',
        'dns',
        'address vm.example.com is not an IP address and its namespace allows only 10.20.0.0/16',
      ],
    ]);
  });
});

describe("the projector function's settings listing", () => {
  it('reads once per period, and again at once after a failed read', async () => {
    let reads = 0;
    let fail = false;
    let now = 0;
    const listing = cachedSettingsListing(
      {
        listSettings: async () => {
          reads += 1;
          if (fail) throw new Error('throttled');
          return [{ namespace: 'shop', addressRanges: ['10.0.0.0/8'] }];
        },
      },
      30_000,
      () => now,
    );
    await listing.listSettings();
    now = 29_999;
    await listing.listSettings();
    expect(reads).toBe(1);
    now = 30_000;
    fail = true;
    await expect(listing.listSettings()).rejects.toThrow('throttled');
    fail = false;
    await expect(listing.listSettings()).resolves.toHaveLength(1);
    expect(reads).toBe(3);
  });
});
