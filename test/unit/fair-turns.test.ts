import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inTurn } from '../../lib/domain/fair-turns.ts';

const flows = (names: string[]) => names.map((namespace) => ({ namespace }));

describe('the order of a run’s first round', () => {
  it('is every namespace once, by name, starting a little further each sweep interval', () => {
    const order = (slot: number) => inTurn(flows(['c', 'a', 'd', 'b']), 1, slot);
    expect(order(0).map((flow) => flow.namespace)).toEqual(['a', 'b', 'c', 'd']);
    expect(order(1).map((flow) => flow.namespace)).toEqual(['b', 'c', 'd', 'a']);
    expect(order(5).map((flow) => flow.namespace)).toEqual(['b', 'c', 'd', 'a']);
  });

  it('serves every namespace within ceil(namespaces / perRun) consecutive runs, whatever the first', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 0, max: 30_000_000 }),
        (names, perRun, first) => {
          const runs = Math.ceil(names.length / perRun);
          const served = new Set<string>();
          for (let slot = first; slot < first + runs; slot++) {
            for (const flow of inTurn(flows(names), perRun, slot).slice(0, perRun)) {
              served.add(flow.namespace);
            }
          }
          expect(served.size).toBe(names.length);
        },
      ),
    );
  });

  it('is empty for no namespace', () => {
    expect(inTurn([], 2_000, 7)).toEqual([]);
  });
});
