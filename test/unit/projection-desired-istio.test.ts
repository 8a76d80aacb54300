import { describe, expect, it } from 'vitest';
import type { EntryRecord } from '../../lib/domain/entry-record.ts';
import { desiredWorkloadEntries } from '../../lib/projection/desired-istio.ts';
import { MANAGED_BY_LABEL } from '../../lib/projection/kinds.ts';

const handMade: EntryRecord = {
  entry: {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadEntry',
    metadata: { name: 'legacy-db', namespace: 'shop', labels: { app: 'db' } },
    spec: { address: '10.0.5.5', ports: { pg: 5432 } },
  },
  revision: 1,
};

describe('desired Istio WorkloadEntries', () => {
  it('carries no empty annotations map for an entry without annotations', () => {
    const [object] = desiredWorkloadEntries([handMade], []).objects;

    expect(object?.metadata).not.toHaveProperty('annotations');
    expect(object?.metadata.labels).toEqual({
      app: 'db',
      [MANAGED_BY_LABEL]: 'workload-registrar',
    });
  });

  it('keeps the annotations an entry has', () => {
    const annotated: EntryRecord = {
      ...handMade,
      entry: {
        ...handMade.entry,
        metadata: { ...handMade.entry.metadata, annotations: { team: 'payments' } },
      },
    };

    const [object] = desiredWorkloadEntries([annotated], []).objects;

    expect(object?.metadata.annotations).toEqual({ team: 'payments' });
  });
});
