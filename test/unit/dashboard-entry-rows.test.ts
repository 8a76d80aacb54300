import { describe, expect, it } from 'vitest';
import {
  BadParameter,
  entryQueryParams,
  nameParam,
  namespaceParam,
} from '../../lib/dashboard-server/api-params.ts';
import {
  type EntryQuery,
  entriesPage,
  indexEntry,
  sortEntries,
} from '../../lib/dashboard-server/entry-rows.ts';
import type { EntryRecord } from '../../lib/domain/entry-record.ts';

/**
 * The entries list, sorted, filtered and paged on the server with `get we -o wide`'s cells,
 * and the API's parameters, refused with the field and the value when they cannot be read.
 */
const T0 = Date.parse('2026-03-01T12:00:00Z');

function record(
  name: string,
  options: {
    ip?: string;
    created?: number;
    connected?: boolean;
    healthy?: 'True' | 'False';
    labels?: Record<string, string>;
    group?: string | null;
  } = {},
): EntryRecord {
  const {
    ip = '10.0.0.1',
    created = T0,
    connected = true,
    healthy,
    labels = {},
    group = 'web',
  } = options;
  return {
    entry: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {
        name,
        namespace: 'shop',
        labels,
        creationTimestamp: new Date(created).toISOString(),
      },
      spec: { address: ip, locality: 'us-east-1/us-east-1a' },
    },
    ...(group === null
      ? {}
      : {
          autoRegistrationGroup: group,
          connection: {
            controller: 'workload-registrar',
            connectionIds: connected ? ['c1'] : [],
            ...(connected ? { connectedAt: created } : { disconnectedAt: created + 1 }),
          },
        }),
    ...(healthy
      ? { health: { status: healthy, lastProbeTime: created, lastTransitionTime: created } }
      : {}),
    revision: 1,
  };
}

const QUERY: EntryQuery = { selector: [], sort: 'name', order: 'asc', page: 1, pageSize: 50 };

function names(records: EntryRecord[], query: Partial<EntryQuery> = {}) {
  const full = { ...QUERY, ...query };
  const sorted = sortEntries(
    records.map((r) => indexEntry(r, T0)),
    full.sort,
    full.order,
  );
  return entriesPage('shop', sorted, full, T0, T0 + 60_000).rows.map((row) => row.name);
}

describe('the entries list', () => {
  const fleet = [
    record('web-10.0.0.12', {
      ip: '10.0.0.12',
      created: T0 - 3_000,
      healthy: 'True',
      labels: { tier: 'a' },
    }),
    record('web-10.0.0.2', {
      ip: '10.0.0.2',
      created: T0 - 1_000,
      healthy: 'False',
      labels: { tier: 'b' },
    }),
    record('web-10.0.0.3', { ip: '10.0.0.3', created: T0 - 2_000, connected: false }),
    record('db-1', { ip: '10.0.1.1', group: null, labels: { tier: 'a' } }),
  ];

  it('sorts names as the table keeps them, addresses as a person reads numbers', () => {
    // The table's key order: the first page by name is one short Query of the table.
    expect(names(fleet)).toEqual(['db-1', 'web-10.0.0.12', 'web-10.0.0.2', 'web-10.0.0.3']);
    // 10.0.0.2 before 10.0.0.12.
    expect(names(fleet, { sort: 'address', order: 'desc' })).toEqual([
      'db-1',
      'web-10.0.0.12',
      'web-10.0.0.3',
      'web-10.0.0.2',
    ]);
    expect(names(fleet, { sort: 'address' })).toEqual([
      'web-10.0.0.2',
      'web-10.0.0.3',
      'web-10.0.0.12',
      'db-1',
    ]);
  });

  it('sorts by AGE as the column reads: youngest first, oldest first in descending order', () => {
    expect(names(fleet, { sort: 'age' })).toEqual([
      'db-1',
      'web-10.0.0.2',
      'web-10.0.0.3',
      'web-10.0.0.12',
    ]);
    expect(names(fleet, { sort: 'age', order: 'desc' })[0]).toBe('web-10.0.0.12');
  });

  it('filters by label selector, group, health, connection and name', () => {
    expect(names(fleet, { selector: [{ key: 'tier', op: 'equals', value: 'a' }] })).toEqual([
      'db-1',
      'web-10.0.0.12',
    ]);
    expect(names(fleet, { group: 'web' })).toHaveLength(3);
    expect(names(fleet, { health: 'unhealthy' })).toEqual(['web-10.0.0.2']);
    expect(names(fleet, { health: 'unknown' })).toEqual(['db-1', 'web-10.0.0.3']);
    expect(names(fleet, { connection: 'disconnected' })).toEqual(['web-10.0.0.3']);
    expect(names(fleet, { connection: 'hand-made' })).toEqual(['db-1']);
    expect(names(fleet, { name: '0.0.1' })).toEqual(['web-10.0.0.12']);
    expect(names(fleet, { health: 'unknown' })).toEqual(['db-1', 'web-10.0.0.3']);
  });

  it("shows get we -o wide's cells", () => {
    const sorted = [indexEntry(fleet[2] as EntryRecord, T0)];
    const [row] = entriesPage('shop', sorted, QUERY, T0, T0 + 60_000).rows;
    expect(row?.cells).toEqual({
      name: 'web-10.0.0.3',
      address: '10.0.0.3',
      connected: 'False',
      healthy: 'False (Disconnected)',
      routable: 'False',
      group: 'web',
      age: '62s',
      network: '<none>',
      locality: 'us-east-1/us-east-1a',
      identity: '<none>',
      agent: '<unknown>',
    });
  });

  it('pages on the server, and a page past the end shows the last', () => {
    const many = Array.from({ length: 120 }, (_, i) =>
      record(`web-${i}`, { ip: `10.0.${i >> 8}.${i & 255}` }),
    );
    const sorted = sortEntries(
      many.map((r) => indexEntry(r, T0)),
      'name',
      'asc',
    );
    const page2 = entriesPage('shop', sorted, { ...QUERY, page: 2 }, T0, T0);
    expect(page2).toMatchObject({ total: 120, matched: 120, pages: 3, page: 2 });
    expect(page2.rows.map((row) => row.name).slice(0, 2)).toEqual(['web-36', 'web-37']); // web-0, web-1, web-10, web-100, ...: the table's order
    const beyond = entriesPage('shop', sorted, { ...QUERY, page: 99 }, T0, T0);
    expect(beyond.page).toBe(3);
    expect(beyond.rows).toHaveLength(20);
  });
});

describe('the API parameters', () => {
  const params = (text: string) => new URLSearchParams(text);

  it('reads a full query', () => {
    expect(
      entryQueryParams(
        params(
          'selector=app%3Dweb&group=web&health=healthy&connection=connected&q=10.&sort=age&order=desc&page=2&pageSize=100',
        ),
      ),
    ).toEqual({
      selector: [{ key: 'app', op: 'equals', value: 'web' }],
      group: 'web',
      health: 'healthy',
      connection: 'connected',
      name: '10.',
      sort: 'age',
      order: 'desc',
      page: 2,
      pageSize: 100,
    });
  });

  it.each([
    ['sort=password', /invalid sort "password": one of name, address/],
    ['order=up', /invalid order "up": one of asc, desc/],
    ['page=0', /invalid page "0": a whole number from 1/],
    ['pageSize=100000', /invalid pageSize "100000": a whole number from 1 to 500/],
    ['health=sick', /invalid health "sick": one of healthy, unhealthy, unknown/],
    ['connection=maybe', /invalid connection "maybe": one of connected, disconnected, hand-made/],
    ['selector=tier%20in%20(a)', /invalid label selector "tier in \(a\)": set-based/],
    ['group=%3Cscript%3E', /invalid group "<script>"/],
  ])('refuses %s, naming the parameter and the value', (query, message) => {
    expect(() => entryQueryParams(params(query))).toThrow(BadParameter);
    expect(() => entryQueryParams(params(query))).toThrow(message);
  });

  it('refuses a missing or invalid namespace or name', () => {
    expect(() => namespaceParam(params(''))).toThrow("missing parameter 'namespace'");
    expect(() => namespaceParam(params('namespace=Shop'))).toThrow('invalid namespace "Shop"');
    expect(() => nameParam(params('name=a/../b'))).toThrow('invalid name "a/../b"');
    expect(namespaceParam(params('namespace=shop'))).toBe('shop');
  });
});
