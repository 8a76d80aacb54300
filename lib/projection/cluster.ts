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
  /**
   * Watches a kind in every namespace (or one): each event as it comes, until the stream ends
   * (`done`: undefined when the server closed it, else why; 410 Gone is `WatchExpiredError`).
   * Only the long-lived local runtime watches; a Lambda lists on its schedule.
   */
  watch?(
    kind: Kind,
    options: WatchOptions,
    onEvent: (event: WatchEvent) => void,
  ): Promise<ClusterWatch>;
}

export interface WatchOptions extends ListOptions {
  /** Resume after this version; absent: start with an ADDED event per existing object. */
  resourceVersion?: string;
  /** The server ends the watch after this long (a new one resumes from the last event). */
  timeoutSeconds?: number;
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  object: KubeObject;
}

export interface ClusterWatch {
  done: Promise<Error | undefined>;
  stop(): void;
}

/** The version a watch resumed from is no longer kept (410): list again, watch from now. */
export class WatchExpiredError extends Error {}

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
