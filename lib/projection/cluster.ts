import type { ObjectRef } from '../domain/model.ts';
import type { Kind } from './kinds.ts';
import type { KubeObject } from './objects.ts';

/**
 * What the projector needs from a Kubernetes cluster, and nothing more. Every write carries
 * the resourceVersion the projector read; losing that race is an outcome ('conflict': re-read
 * and retry), never an overwrite and never an exception.
 */
export interface Cluster {
  /** Every object of a kind, in one namespace or (namespace undefined) in all of them. */
  list(kind: Kind, options?: ListOptions): Promise<KubeObject[]>;
  get(kind: Kind, ref: ObjectRef): Promise<KubeObject | undefined>;
  /** 409 AlreadyExists is 'conflict': someone (another projector, a person) got there first. */
  create(kind: Kind, object: KubeObject): Promise<WriteResult>;
  /** PUT with `metadata.resourceVersion`: 409 on a stale version, 'gone' when deleted meanwhile. */
  replace(kind: Kind, object: KubeObject): Promise<WriteResult>;
  /** PUT .../status: only status changes, and only at the resourceVersion given. */
  replaceStatus(kind: Kind, object: KubeObject): Promise<WriteResult>;
  /** DELETE with uid and resourceVersion preconditions, so a changed object is not deleted. */
  delete(kind: Kind, object: KubeObject): Promise<'deleted' | 'conflict' | 'gone'>;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
}

export type WriteResult =
  | { outcome: 'written'; object: KubeObject }
  | { outcome: 'conflict' }
  | { outcome: 'gone' };

/** The API server answered with an error the projector cannot resolve by re-reading. */
export class ClusterError extends Error {
  readonly statusCode: number;
  readonly reason: string | undefined;

  constructor(message: string, statusCode: number, reason?: string) {
    super(message);
    this.name = new.target.name;
    this.statusCode = statusCode;
    this.reason = reason;
  }
}

/**
 * A kind's API is not served: its CRD is not installed (Istio or Linkerd missing) while the
 * target that writes it is enabled. Reported with what to do, instead of failing every write.
 */
export class KindNotInstalledError extends ClusterError {
  readonly kind: Kind;

  constructor(kind: Kind, apiVersion: string) {
    super(
      `the cluster does not serve ${kind} (${apiVersion}): install its CRD or disable the target that writes it`,
      404,
      'NotFound',
    );
    this.kind = kind;
  }
}
