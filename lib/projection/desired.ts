import type { ManagedKind } from './kinds.ts';
import type { KubeObject } from './objects.ts';

/** The objects one target wants in the cluster, computed from the registry alone. */
export interface DesiredState {
  kind: ManagedKind;
  objects: KubeObject[];
  /**
   * Entries that cannot be projected (a Linkerd group without its identity annotation). They
   * are reported; an object already in the cluster for them is kept, not deleted, so a
   * configuration mistake never takes a running VM out of the mesh.
   */
  problems: Problem[];
}

export interface Problem {
  kind: ManagedKind;
  namespace: string;
  name: string;
  message: string;
}

/** Object metadata the projector owns, without what the API server or the registry adds. */
export function managedMetadata(
  object: KubeObject,
): Pick<KubeObject['metadata'], 'labels' | 'annotations' | 'ownerReferences'> {
  const { labels, annotations, ownerReferences } = object.metadata;
  return { labels, annotations, ownerReferences };
}
