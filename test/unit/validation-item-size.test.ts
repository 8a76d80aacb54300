import { describe, expect, it } from 'vitest';
import { EVENTS_TRIM_AT } from '../../lib/domain/entry-events.ts';
import type { WorkloadEntry, WorkloadGroup } from '../../lib/domain/model.ts';
import { MAX_LABELS } from '../../lib/protocol/connect-request.ts';
import { InvalidDocumentsError, parseIstioDocuments } from '../../lib/protocol/istio-documents.ts';
import {
  AGENT_LABELS_MAX,
  CATALOG_ITEM_LIMITS,
  CONNECT_RESERVE_BYTES,
  entrySizeRefusal,
  groupSizeRefusal,
  HISTORY_RESERVE_BYTES,
} from '../../lib/store/catalog-item-limits.ts';
import {
  formatBytes,
  itemSize,
  largestFields,
  MAX_ITEM_BYTES,
  valueSize,
} from '../../lib/store/item-size.ts';

/** `count` labels of `valueLength` characters: a label map of a chosen size. */
function manyLabels(count: number, valueLength = 60): Record<string, string> {
  return Object.fromEntries(
    Array.from({ length: count }, (_, i) => [`l${i}`, 'v'.repeat(valueLength)]),
  );
}

function group(spec: Partial<WorkloadGroup['spec']>): WorkloadGroup {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { template: { ports: { http: 8080 } }, ...spec },
  };
}

function entry(overrides: Partial<WorkloadEntry>): WorkloadEntry {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadEntry',
    metadata: { name: 'db-1', namespace: 'shop' },
    spec: { address: '10.0.0.5' },
    ...overrides,
  };
}

describe('DynamoDB item size', () => {
  it('counts strings in UTF-8 bytes and attribute names with their values', () => {
    expect(valueSize('abc')).toBe(3);
    expect(valueSize('é')).toBe(2);
    expect(itemSize({ pk: 'NS#shop', flag: true, none: null })).toBe(2 + 7 + 4 + 1 + 4 + 1);
  });

  it('counts 3 bytes per map or list and 1 byte per element, map names included', () => {
    expect(valueSize({})).toBe(3);
    expect(valueSize({ app: 'web' })).toBe(3 + 1 + 3 + 3);
    expect(valueSize(['a', 'bc'])).toBe(3 + 1 + 1 + 1 + 2);
    expect(valueSize(new Set(['conn-1', 'conn-2']))).toBe(12);
  });

  it('skips undefined members, as the document client does', () => {
    expect(valueSize({ a: undefined, b: 'x' })).toBe(3 + 1 + 1 + 1);
    expect(itemSize({ a: undefined })).toBe(0);
  });

  it('counts a number at one byte per two significant digits plus two (AWS says about one)', () => {
    expect(valueSize(7)).toBe(3);
    expect(valueSize(8080)).toBe(4);
    expect(valueSize(1_000_000)).toBe(3);
    expect(valueSize(Number.MAX_SAFE_INTEGER)).toBe(10);
  });

  it('names a map of many small members as the map, and one huge member as itself', () => {
    const document = {
      metadata: {
        name: 'web',
        annotations: { small: 'x', 'example.com/notes': 'n'.repeat(50_000) },
      },
      spec: { template: { labels: manyLabels(1000) } },
    };
    const fields = largestFields(document, valueSize(document));
    expect(fields.map((field) => field.path)).toEqual([
      ['spec', 'template', 'labels'],
      ['metadata', 'annotations', 'example.com/notes'],
    ]);
    expect(fields[1]?.bytes).toBe(1 + 17 + 50_000);
  });

  it('shows sizes in KB rounded up, so that a size over the limit never reads as the limit', () => {
    expect(formatBytes(812)).toBe('812 bytes');
    expect(formatBytes(390 * 1024)).toBe('390 KB');
    expect(formatBytes(MAX_ITEM_BYTES + 1)).toBe('400.1 KB');
  });
});

describe('groupSizeRefusal', () => {
  it('accepts an ordinary group', () => {
    expect(groupSizeRefusal(group({ metadata: { labels: { app: 'web' } } }))).toBeUndefined();
  });

  it('refuses a group over 400 KB, naming the field that makes it large', () => {
    const refusal = groupSizeRefusal(group({ template: { labels: manyLabels(6500) } }));
    expect(refusal?.field).toBe('spec.template.labels');
    expect(refusal?.message).toMatch(
      /^spec\.template\.labels is 4\d\d(\.\d)? KB \(the whole WorkloadGroup 4\d\d(\.\d)? KB\); a WorkloadGroup is stored as one DynamoDB item, which must stay under 400 KB: make it smaller$/,
    );
  });

  it('names every field that holds a large share, largest first', () => {
    const refusal = groupSizeRefusal(
      group({
        metadata: { labels: manyLabels(3000, 62) },
        template: { labels: manyLabels(3200, 62) },
      }),
    );
    expect(refusal?.message).toMatch(
      /^spec\.template\.labels is \d+(\.\d)? KB, spec\.metadata\.labels is \d+(\.\d)? KB \(the whole WorkloadGroup .*: make these fields smaller$/,
    );
  });

  it('refuses a group that fits but whose entries would not: they hold its labels twice', () => {
    // About 200 KB of labels: the group fits, an entry would hold 400 KB of labels alone.
    const large = group({ template: { labels: manyLabels(3000) } });
    const refusal = groupSizeRefusal(large);
    expect(refusal?.field).toBe('spec.template.labels');
    expect(refusal?.message).toMatch(
      /^spec\.template\.labels is \d+(\.\d)? KB: each WorkloadEntry of this group holds its template, its annotations and its labels twice \(metadata\.labels and spec\.labels\), and would be up to 4\d\d(\.\d)? KB with what a connecting agent and its event history add \(up to 84\.4 KB\); a WorkloadEntry is stored as one DynamoDB item, which must stay under 400 KB: make it smaller$/,
    );
  });

  it("leaves room in each entry for the most a connect adds (protocol v1's label cap)", () => {
    expect(AGENT_LABELS_MAX).toBe(MAX_LABELS);
    expect(CONNECT_RESERVE_BYTES).toBe(64 * 2 * 381 + 16 * 1024);
  });
});

describe('entrySizeRefusal', () => {
  it('accepts an ordinary hand-made entry', () => {
    expect(entrySizeRefusal(entry({}))).toBeUndefined();
  });

  it('refuses a hand-made entry that fits but leaves no room for its events and a cordon', () => {
    // ~390 KB of labels: under 400 KB, over it once a cordon and a full event list come.
    const near = entry({ spec: { address: '10.0.0.5', labels: manyLabels(6150) } });
    const refusal = entrySizeRefusal(near);
    expect(refusal?.message).toMatch(
      /^spec\.labels is \d+(\.\d)? KB \(the whole WorkloadEntry 3\d\d(\.\d)? KB\); a WorkloadEntry is stored as one DynamoDB item, which must stay under 400 KB with room for its events and a cordon \(20\.8 KB\): make it smaller$/,
    );
    expect(HISTORY_RESERVE_BYTES).toBe(
      (EVENTS_TRIM_AT + 5) * (8 + 4 + 9 + 24 + 200 * 4 + 1) + 1024 * 4 + 256,
    );
  });

  it('refuses a hand-made entry over 400 KB, naming its largest field', () => {
    const large = entry({ spec: { address: '10.0.0.5', labels: manyLabels(6500) } });
    const refusal = entrySizeRefusal(large);
    expect(refusal?.field).toBe('spec.labels');
    expect(refusal?.message).toMatch(
      /^spec\.labels is \d+(\.\d)? KB \(the whole WorkloadEntry 4\d\d(\.\d)? KB\); a WorkloadEntry is stored as one DynamoDB item, which must stay under 400 KB: make it smaller$/,
    );
  });
});

describe('apply refuses an oversized document with the rest of its input', () => {
  it('names the document, the field and the sizes', () => {
    const labels = Object.entries(manyLabels(6500))
      .map(([key, value]) => `${key}: ${value}`)
      .join(', ');
    const input = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: db-1, namespace: shop}
spec: {address: 10.0.0.5}
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec:
  template:
    labels: {${labels}}
`;
    let problems: string[] = [];
    try {
      parseIstioDocuments(input, { limits: CATALOG_ITEM_LIMITS });
    } catch (error) {
      if (!(error instanceof InvalidDocumentsError)) throw error;
      problems = error.problems;
    }
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^document 2 \(WorkloadGroup web\): spec\.template\.labels is \d+(\.\d)? KB \(the whole WorkloadGroup 4\d\d(\.\d)? KB\); a WorkloadGroup is stored as one DynamoDB item, which must stay under 400 KB: make it smaller$/,
    );
  });
});
