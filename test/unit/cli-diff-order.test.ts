import { describe, expect, it } from 'vitest';
import { inOrderOf } from '../../cli/commands/diff.ts';

describe('registrar diff: the stored object in the order of the applied one', () => {
  it("takes the applied object's key order at every depth, values untouched", () => {
    // As DynamoDB Local returns a map: the same keys, in another order.
    const live = {
      spec: { address: '10.0.0.5' },
      metadata: { uid: 'u', labels: { app: 'db' }, name: 'db-1', creationTimestamp: 't' },
      kind: 'WorkloadEntry',
    };
    const merged = {
      kind: 'WorkloadEntry',
      metadata: { name: 'db-1', labels: { app: 'db' }, creationTimestamp: 't', uid: 'u' },
      spec: { address: '10.0.0.5' },
    };
    const ordered = inOrderOf(live, merged);
    expect(JSON.stringify(ordered)).toBe(JSON.stringify(merged));
  });

  it('keeps keys only the stored object has, sorted after the others, and arrays in order', () => {
    const ordered = inOrderOf({ z: 1, b: [{ y: 1, x: 2 }], a: 2, m: 3 }, { a: 0, b: [{ x: 0 }] });
    expect(JSON.stringify(ordered)).toBe('{"a":2,"b":[{"x":2,"y":1}],"m":3,"z":1}');
  });
});
