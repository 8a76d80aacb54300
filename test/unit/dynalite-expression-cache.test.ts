import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type CachingParser,
  COVERED_DYNALITE_VERSION,
  cachingParser,
  dynaliteParser,
  freshParse,
  installExpressionCache,
  installedDynaliteVersion,
  PARSERS,
  type ParserName,
} from '../../infra/local/dynalite-expression-cache.ts';

/**
 * The local store's expression cache against dynalite's own parsers: every request goes through
 * dynalite's real validation (`validateExpressions`, which sets the parsed trees on the request
 * and refuses unused names and values) twice, once with dynalite's parsers and once with the
 * cache in front of them, and both must say the same. The cases are the ones where a cache keyed
 * on the text alone would go wrong.
 */

const requireCjs = createRequire(import.meta.url);
const validations = requireCjs('dynalite/validations') as {
  validateExpressions(data: Record<string, unknown>): string | undefined;
};

type Request = Record<string, unknown>;

/** dynalite's own parsers, taken before any test puts a cache in front of them. */
const fresh = Object.fromEntries(PARSERS.map((name) => [name, freshParse(name)])) as Record<
  ParserName,
  CachingParser['parse']
>;
const installed = Object.fromEntries(
  PARSERS.map((name) => [name, dynaliteParser(name).parse]),
) as Record<ParserName, CachingParser['parse']>;

afterEach(() => {
  for (const name of PARSERS) dynaliteParser(name).parse = installed[name];
});

function withParsers(parse: (name: ParserName) => CachingParser['parse'], request: Request) {
  for (const name of PARSERS) dynaliteParser(name).parse = parse(name);
  const data = structuredClone(request);
  const message = validations.validateExpressions(data);
  return {
    message,
    trees: {
      updates: data._updates,
      condition: data._condition,
      keyCondition: data._keyCondition,
      filter: data._filter,
    },
  };
}

/** Runs `requests` in order through both; returns the cache's counters and each answer. */
function both(requests: Request[]) {
  const caches = Object.fromEntries(
    PARSERS.map((name) => [name, cachingParser(name, { parse: fresh[name] })]),
  ) as Record<ParserName, CachingParser>;
  const answers = requests.map((request) => {
    const parsed = withParsers((name) => fresh[name], request);
    const cached = withParsers((name) => caches[name].parse, request);
    expect(cached).toStrictEqual(parsed);
    return cached;
  });
  const hits = caches.conditionParser.stats.hits + caches.updateParser.stats.hits;
  const uncached = caches.conditionParser.stats.uncached + caches.updateParser.stats.uncached;
  return { answers, hits, uncached };
}

const disconnect = (connection: string, at: number): Request => ({
  UpdateExpression:
    'SET #evList = list_append(if_not_exists(#evList, :evNone), :evNew), disconnectedAt = :at ' +
    'REMOVE connectedAt, #h0, #b0 DELETE conns :connections ADD revision :one',
  ConditionExpression: 'attribute_exists(pk) AND contains(conns, :c0)',
  ExpressionAttributeNames: {
    '#h0': `held:${connection}`,
    '#b0': `by:${connection}`,
    '#evList': 'events',
  },
  ExpressionAttributeValues: {
    ':at': { N: String(at) },
    ':connections': { SS: [connection] },
    ':one': { N: '1' },
    ':c0': { S: connection },
    ':evNone': { L: [] },
    ':evNew': { L: [{ M: { at: { N: String(at) }, kind: { S: 'disconnected' } } }] },
  },
});

/** A fresh context for `SET #a = :v`: one name, one string value, both still unused. */
const setOneName = () => ({
  attrNames: { '#a': 'a' },
  attrVals: { ':v': { S: 'x' } },
  unusedAttrNames: { '#a': true },
  unusedAttrVals: { ':v': true },
  isReserved: () => false,
});

describe('dynalite expression cache', () => {
  it('answers a text it parsed before with the request’s own names and values', () => {
    const { answers, hits } = both([disconnect('conn-a', 1), disconnect('conn-b', 2)]);
    expect(hits).toBe(2);
    expect(answers[1]?.message).toBeUndefined();
    const updates = JSON.stringify(answers[1]?.trees.updates);
    expect(updates).toContain('held:conn-b');
    expect(updates).toContain('"N":"2"');
    expect(updates).not.toContain('conn-a');
  });

  it('refuses names that repeat each other, as dynalite does, after the text was cached', () => {
    const set = (a: string, b: string): Request => ({
      UpdateExpression: 'SET #a = :x, #b = :y',
      ExpressionAttributeNames: { '#a': a, '#b': b },
      ExpressionAttributeValues: { ':x': { S: '1' }, ':y': { S: '2' } },
    });
    const { answers, uncached } = both([set('one', 'two'), set('one', 'one')]);
    expect(answers[1]?.message).toMatch(/Two document paths overlap/);
    expect(uncached).toBe(1);
  });

  it('refuses a name that repeats one the text spells out', () => {
    const set = (b: string): Request => ({
      UpdateExpression: 'SET heldBy = :x, #b = :y',
      ExpressionAttributeNames: { '#b': b },
      ExpressionAttributeValues: { ':x': { S: '1' }, ':y': { S: '2' } },
    });
    const { answers } = both([set('other'), set('heldBy')]);
    expect(answers[1]?.message).toMatch(/Two document paths overlap/);
  });

  it('refuses operands that a repeated name makes the same', () => {
    const condition = (a: string, b: string): Request => ({
      ConditionExpression: 'attribute_exists(pk) AND begins_with(#a, #b)',
      ExpressionAttributeNames: { '#a': a, '#b': b },
    });
    const { answers } = both([condition('x', 'y'), condition('x', 'x')]);
    expect(answers[1]?.message).toMatch(/must be distinct/);
  });

  it('refuses a value whose type the text does not allow, after a cached parse with another', () => {
    const add = (one: Record<string, unknown>): Request => ({
      UpdateExpression: 'SET #n = #n + :one',
      ExpressionAttributeNames: { '#n': 'count' },
      ExpressionAttributeValues: { ':one': one },
    });
    const { answers } = both([add({ N: '1' }), add({ S: '1' })]);
    expect(answers[1]?.message).toMatch(/Incorrect operand type/);
  });

  it('parses BETWEEN afresh: a lower bound above the upper one is refused', () => {
    const between = (low: string, high: string): Request => ({
      ConditionExpression: '#t BETWEEN :low AND :high',
      ExpressionAttributeNames: { '#t': 'at' },
      ExpressionAttributeValues: { ':low': { N: low }, ':high': { N: high } },
    });
    const { answers, hits } = both([between('1', '2'), between('3', '2')]);
    expect(answers[1]?.message).toMatch(/upper bound to be greater than or equal/);
    expect(hits).toBe(0);
  });

  it('counts a name as used by a cached condition even when the update used it first', () => {
    // The first request's update crosses #a off before its condition runs: what the condition
    // uses must be known from the condition alone, or the second request's #a looks unused.
    const request = (update: string): Request => ({
      UpdateExpression: update,
      ConditionExpression: 'attribute_exists(#a)',
      ExpressionAttributeNames: { '#a': 'a', '#c': 'c' },
    });
    const { answers, hits } = both([request('REMOVE #a, #c'), request('REMOVE #c')]);
    expect(hits).toBe(1);
    expect(answers[1]?.message).toBeUndefined();
  });

  it('still refuses a name no expression uses', () => {
    const request = (names: Record<string, string>): Request => ({
      ConditionExpression: 'attribute_not_exists(#a)',
      ExpressionAttributeNames: names,
    });
    const { answers } = both([request({ '#a': 'a' }), request({ '#a': 'b' })]);
    expect(answers[1]?.message).toBeUndefined();
    const unused = both([request({ '#a': 'a', '#z': 'z' }), request({ '#a': 'b', '#z': 'y' })]);
    expect(unused.answers[1]?.message).toMatch(/unused in expressions: keys: \{#z\}/);
  });

  it('keeps key conditions and filters of a query apart', () => {
    const query = (pk: string): Request => ({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      FilterExpression: 'attribute_exists(#n) AND size(#n) > :zero',
      ExpressionAttributeNames: { '#n': 'name' },
      ExpressionAttributeValues: {
        ':pk': { S: pk },
        ':prefix': { S: 'WE#' },
        ':zero': { N: '0' },
      },
    });
    const { answers, hits } = both([query('NS#a'), query('NS#b')]);
    expect(hits).toBe(2);
    expect(JSON.stringify(answers[1]?.trees.keyCondition)).toContain('NS#b');
  });

  it('gives a syntax error its own message and caches nothing', () => {
    const bad: Request = { ConditionExpression: 'attribute_exists(' };
    const { answers, hits, uncached } = both([bad, bad]);
    expect(answers[0]?.message).toMatch(/Syntax error/);
    expect(hits).toBe(0);
    expect(uncached).toBe(2);
  });

  it('hands out copies: a caller changing its tree does not change the next one', () => {
    const caching = cachingParser('updateParser', { parse: fresh.updateParser });
    const context = setOneName;
    const first = caching.parse('SET #a = :v', { context: context() }) as {
      sections: { path: string[] }[];
    };
    first.sections[0]?.path.push('changed');
    const second = caching.parse('SET #a = :v', { context: context() });
    expect(second).toStrictEqual(fresh.updateParser('SET #a = :v', { context: context() }));
  });

  it('with the check on, throws when a cached parse differs from a fresh one', () => {
    // A parser whose answer changes between calls stands in for a cache that went wrong.
    let calls = 0;
    const drifting = {
      parse: () => {
        calls += 1;
        return { type: 'drift', call: calls };
      },
    };
    const checked = cachingParser('conditionParser', drifting, true);
    const context = () => ({
      attrNames: {},
      attrVals: {},
      unusedAttrNames: {},
      unusedAttrVals: {},
    });
    expect(() => checked.parse('a = b', { context: context() })).toThrow(
      /a cached parse differs from parsing a = b/,
    );
  });
});

describe('the check (REGISTRAR_DYNALITE_PARSE_CHECK)', () => {
  const context = setOneName;

  it('parses afresh the first 16 hits of a key, then one in 64, and every hit agrees', () => {
    let freshParses = 0;
    const counting = {
      parse: (text: string, options: { context: Record<string, unknown> }) => {
        freshParses += 1;
        return fresh.updateParser(text, options as never);
      },
    };
    const checked = cachingParser('updateParser', counting, true);
    for (let i = 0; i < 200; i++) {
      expect(checked.parse('SET #a = :v', { context: context() })).toStrictEqual(
        fresh.updateParser('SET #a = :v', { context: context() }),
      );
    }
    // The miss parses twice (stand-ins, then the check); hits 1-16, 64, 128 and 192 once each.
    expect(checked.stats).toMatchObject({ misses: 1, hits: 199, checked: 20 });
    expect(freshParses).toBe(2 + 19);
  });

  it('still catches a drift that starts after the first hits, at a sampled one', () => {
    let calls = 0;
    const drifting = {
      parse: () => {
        calls += 1;
        // Right for the miss and the first 16 hits (18 parses), wrong after: a late drift.
        return { type: 'tree', drifted: calls > 18 };
      },
    };
    const checked = cachingParser('conditionParser', drifting, true);
    const noNames = () => ({
      attrNames: {},
      attrVals: {},
      unusedAttrNames: {},
      unusedAttrVals: {},
    });
    let thrownAt = -1;
    for (let i = 0; i < 200 && thrownAt < 0; i++) {
      try {
        checked.parse('a = b', { context: noNames() });
      } catch {
        thrownAt = i;
      }
    }
    expect(thrownAt).toBe(64);
  });
});

describe('the dynalite release the cache covers', () => {
  it('is the one package.json pins, exactly, and the one installed', () => {
    const manifest = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
    // A range (^4.0.0) would let a minor release change the internals the cache reaches into.
    expect(manifest.devDependencies?.dynalite).toBe(COVERED_DYNALITE_VERSION);
    // Only the local runtime uses it: no function bundle or installed CLI pulls it in.
    expect(manifest.dependencies?.dynalite).toBeUndefined();
    expect(installedDynaliteVersion()).toBe(COVERED_DYNALITE_VERSION);
  });

  it('leaves the parsers of another dynalite release alone', () => {
    for (const name of PARSERS) dynaliteParser(name).parse = fresh[name];
    expect(installExpressionCache(false, '4.1.0')).toStrictEqual({});
    for (const name of PARSERS) expect(dynaliteParser(name).parse).toBe(fresh[name]);
  });

  it('goes in front of the parsers of the covered release', () => {
    for (const name of PARSERS) dynaliteParser(name).parse = fresh[name];
    const stats = installExpressionCache(false, COVERED_DYNALITE_VERSION);
    expect(Object.keys(stats).sort()).toStrictEqual([...PARSERS].sort());
    for (const name of PARSERS) expect(dynaliteParser(name).parse).not.toBe(fresh[name]);
  });
});
