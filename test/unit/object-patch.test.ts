import { describe, expect, it } from 'vitest';
import { jsonPatch, mergePatch, PatchError } from '../../cli/object-patch.ts';
import { ownedFieldChanged } from '../../cli/owned-fields.ts';
import { derivedEntryUid } from '../../lib/domain/entry-uid.ts';

describe('merge patch (RFC 7386)', () => {
  it('merges objects, removes on null, replaces lists and leaves the input alone', () => {
    const target = { a: { b: 1, c: [1, 2] }, d: 'x' };
    expect(mergePatch(target, { a: { b: null, c: [3] }, e: true })).toEqual({
      a: { c: [3] },
      d: 'x',
      e: true,
    });
    expect(target).toEqual({ a: { b: 1, c: [1, 2] }, d: 'x' });
  });
});

describe('JSON patch (RFC 6902)', () => {
  const doc = { metadata: { labels: { 'a/b': '1', 'x~y': '2' } }, list: [1, 2, 3] };

  it('adds, removes, replaces, moves, copies and tests, with ~0 and ~1 escapes and -', () => {
    expect(
      jsonPatch(doc, [
        { op: 'add', path: '/list/-', value: 4 },
        { op: 'add', path: '/list/0', value: 0 },
        { op: 'remove', path: '/metadata/labels/a~1b' },
        { op: 'replace', path: '/metadata/labels/x~0y', value: '3' },
        { op: 'copy', from: '/list/1', path: '/first' },
        { op: 'move', from: '/first', path: '/metadata/labels/first' },
        { op: 'test', path: '/list/4', value: 4 },
      ]),
    ).toEqual({ metadata: { labels: { 'x~y': '3', first: 1 } }, list: [0, 1, 2, 3, 4] });
    expect(doc.list).toEqual([1, 2, 3]);
  });

  it('refuses, naming the operation and the path: a missing path, a failed test, a bad index', () => {
    expect(() => jsonPatch(doc, [{ op: 'remove', path: '/nope' }])).toThrow(
      "operation 1: path '/nope' does not exist",
    );
    expect(() => jsonPatch(doc, [{ op: 'test', path: '/list/0', value: 9 }])).toThrow(
      'operation 1: test of /list/0 failed: it is 1',
    );
    expect(() => jsonPatch(doc, [{ op: 'replace', path: '/list/7', value: 9 }])).toThrow(
      "'7' in '/list/7' is not an index of a list of 3",
    );
    expect(() => jsonPatch(doc, { op: 'add' })).toThrow(PatchError);
    expect(() => jsonPatch(doc, [{ op: 'frob', path: '/a' }])).toThrow("unknown op 'frob'");
    expect(() => jsonPatch(doc, [{ op: 'add', path: '/a' }])).toThrow('needs "value"');
  });
});

describe('the fields the registrar owns', () => {
  const group = {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', uid: 'u', labels: { a: '1' } },
    spec: {},
  };

  it('lets labels and spec change, never the uid or name', () => {
    expect(
      ownedFieldChanged(group, { ...group, metadata: { ...group.metadata, labels: {} } }, false),
    ).toBeUndefined();
    expect(
      ownedFieldChanged(group, { ...group, metadata: { ...group.metadata, uid: 'v' } }, false),
    ).toBe('metadata.uid');
    expect(
      ownedFieldChanged(group, { ...group, metadata: { ...group.metadata, name: 'x' } }, false),
    ).toBe('metadata.name');
  });

  it('owns all of an auto-registered entry, naming the first field changed', () => {
    expect(ownedFieldChanged(group, { ...group, spec: { address: '10.0.0.1' } }, true)).toBe(
      'spec.address',
    );
  });
});

describe('the uid of an auto-registered entry', () => {
  it('is UUID-shaped, stable for one entry, and new for the same name created again', () => {
    const one = derivedEntryUid('shop', 'web-10.0.0.1', '2026-03-01T12:00:00.000Z');
    expect(one).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(derivedEntryUid('shop', 'web-10.0.0.1', '2026-03-01T12:00:00.000Z')).toBe(one);
    expect(derivedEntryUid('shop', 'web-10.0.0.1', '2026-03-01T12:05:00.000Z')).not.toBe(one);
    expect(derivedEntryUid('shopx', 'web-10.0.0.1', '2026-03-01T12:00:00.000Z')).not.toBe(one);
  });
});
