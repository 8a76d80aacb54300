import { isDeepStrictEqual } from 'node:util';
import { formatRef, type WorkloadGroup } from '../domain/model.ts';
import type { StoredGroup } from '../domain/registry-records.ts';
import type { DocumentSizeLimits } from '../protocol/document-size-limits.ts';
import { InvalidDocumentsError, parseIstioDocuments } from '../protocol/istio-documents.ts';
import type { KubeObject } from './objects.ts';

/**
 * The cluster's WorkloadGroups read as the registry reads a document (`registrar apply`'s
 * checks): what Kubernetes adds (uid, resourceVersion, managedFields, status) is dropped, and
 * so is kubectl's `last-applied-configuration` annotation (a copy of the object, meaningless
 * to the registry). The cluster's uid is kept apart: a group the sync creates takes it, so
 * projected entries' ownerReferences and the registry agree.
 */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

export interface ClusterGroups {
  groups: { group: WorkloadGroup; uid: string | undefined }[];
  /** Groups the registry cannot take as they are: left as the registry has them, reported. */
  problems: { group: string; message: string }[];
}

export function readClusterGroups(
  objects: readonly KubeObject[],
  limits: DocumentSizeLimits,
): ClusterGroups {
  const result: ClusterGroups = { groups: [], problems: [] };
  for (const object of objects) {
    const { name, namespace, labels, annotations, uid } = object.metadata;
    const { [LAST_APPLIED_ANNOTATION]: _copy, ...kept } = annotations ?? {};
    const document = {
      apiVersion: object.apiVersion,
      kind: 'WorkloadGroup',
      metadata: {
        name,
        namespace,
        ...(labels && Object.keys(labels).length > 0 ? { labels } : {}),
        ...(Object.keys(kept).length > 0 ? { annotations: kept } : {}),
      },
      spec: object.spec,
    };
    try {
      const [parsed] = parseIstioDocuments(JSON.stringify(document), { limits });
      if (parsed?.kind === 'WorkloadGroup') result.groups.push({ group: parsed.group, uid });
    } catch (error) {
      if (!(error instanceof InvalidDocumentsError)) throw error;
      const message = error.problems
        .map((p) => p.replace(/^document 1 \([^)]*\): /, ''))
        .join('; ');
      result.problems.push({ group: `${namespace}/${name}`, message });
    }
  }
  return result;
}

/**
 * Where a cluster group and the registry's copy differ, as the registry compares on apply
 * (spec, labels, annotations): `spec.template`, `metadata.labels`, ... Empty: the same.
 */
export function groupDifferences(registry: WorkloadGroup, cluster: WorkloadGroup): string[] {
  const a = plain(registry);
  const b = plain(cluster);
  const fields: string[] = [];
  for (const part of ['template', 'metadata', 'probe'] as const) {
    if (!isDeepStrictEqual(a.spec[part] ?? {}, b.spec[part] ?? {})) fields.push(`spec.${part}`);
  }
  for (const part of ['labels', 'annotations'] as const) {
    if (!isDeepStrictEqual(a.metadata[part] ?? {}, b.metadata[part] ?? {})) {
      fields.push(`metadata.${part}`);
    }
  }
  return fields;
}

export function groupsByRef(groups: readonly StoredGroup[]): Map<string, StoredGroup> {
  return new Map(groups.map((stored) => [formatRef(stored.group.metadata), stored]));
}

/** Drops `undefined` members, as storing does. */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
