import type { Condition } from '../domain/model.ts';
import type { ManagedKind } from './kinds.ts';
import { type KubeObject, sameJson, sameList, sameMap } from './objects.ts';

/** One write the projector has to make. */
export type Action =
  | { type: 'create'; kind: ManagedKind; object: KubeObject }
  /**
   * The object at the resourceVersion it was read at, with the managed fields set. With
   * `status`, the status subresource is written after it (at the version the replace returns),
   * or before it when `leavesTraffic`.
   */
  | {
      type: 'replace';
      kind: ManagedKind;
      object: KubeObject;
      status?: KubeObject['status'];
      leavesTraffic?: boolean;
    }
  | { type: 'replaceStatus'; kind: ManagedKind; object: KubeObject; leavesTraffic?: boolean }
  | { type: 'delete'; kind: ManagedKind; object: KubeObject };

export interface DiffInput {
  kind: ManagedKind;
  /** Whether the kind's status is a subresource (written apart, ignored by object writes). */
  statusSubresource: boolean;
  desired: readonly KubeObject[];
  /** Objects listed from the cluster: only managed ones (managed-by label). */
  actual: readonly KubeObject[];
  /** `namespace/name` of objects to leave as they are (entries that could not be projected). */
  keep?: ReadonlySet<string>;
}

/**
 * The difference between desired and actual, as writes. Pure. Only the fields the projector
 * owns are compared (labels, annotations, ownerReferences, spec, status conditions), so
 * fields the API server or other controllers add (uid, finalizers, managedFields) never cause
 * a write, and anything edited by hand in the owned fields is put back.
 */
export function diff(input: DiffInput): Action[] {
  const { kind, statusSubresource } = input;
  const actualByKey = new Map(input.actual.map((object) => [refKey(object), object]));
  const desiredKeys = new Set<string>();
  const actions: Action[] = [];
  for (const desired of [...input.desired].sort(byRef)) {
    const key = refKey(desired);
    desiredKeys.add(key);
    const actual = actualByKey.get(key);
    if (!actual) {
      actions.push({ type: 'create', kind, object: desired });
      continue;
    }
    const objectChanged = !sameObject(desired, actual);
    const statusChanged = !sameList(desired.status?.conditions, actual.status?.conditions);
    const status = statusChanged ? mergedStatus(actual, desired) : actual.status;
    const leavesTraffic =
      statusSubresource && losesTrue(actual.status?.conditions, desired.status?.conditions);
    if (objectChanged && statusSubresource) {
      const action: Action = {
        type: 'replace',
        kind,
        object: withOwnedFields(actual, desired, actual.status),
      };
      if (statusChanged) action.status = status;
      if (leavesTraffic) action.leavesTraffic = true;
      actions.push(action);
    } else if (objectChanged || (statusChanged && !statusSubresource)) {
      actions.push({ type: 'replace', kind, object: withOwnedFields(actual, desired, status) });
    } else if (statusChanged) {
      const action: Action = { type: 'replaceStatus', kind, object: { ...actual, status } };
      if (leavesTraffic) action.leavesTraffic = true;
      actions.push(action);
    }
  }
  for (const actual of [...input.actual].sort(byRef)) {
    const key = refKey(actual);
    if (!desiredKeys.has(key) && !input.keep?.has(key))
      actions.push({ type: 'delete', kind, object: actual });
  }
  return actions;
}

/**
 * Whether a condition that is `True` in the cluster is not `True` in what is desired: the
 * change takes the object out of traffic (istiod routes to a WorkloadEntry with health checks
 * only while its `Healthy` is True). Such a status is written before the object and made to
 * hold even when its own write fails (apply.ts): with a status subresource, no object write
 * can take a stored `Healthy: True` back, so a crashed VM's new annotations alone leave it
 * routable.
 */
function losesTrue(actual: Condition[] | undefined, desired: Condition[] | undefined): boolean {
  return (actual ?? []).some(
    (condition) =>
      condition.status === 'True' &&
      desired?.find((wanted) => wanted.type === condition.type)?.status !== 'True',
  );
}

function sameObject(desired: KubeObject, actual: KubeObject): boolean {
  return (
    sameMap(desired.metadata.labels, actual.metadata.labels) &&
    sameMap(desired.metadata.annotations, actual.metadata.annotations) &&
    sameList(desired.metadata.ownerReferences, actual.metadata.ownerReferences) &&
    sameJson(desired.spec, actual.spec)
  );
}

/** The actual object (resourceVersion, uid, finalizers...) with the owned fields replaced. */
function withOwnedFields(
  actual: KubeObject,
  desired: KubeObject,
  status: KubeObject['status'],
): KubeObject {
  const metadata = { ...actual.metadata };
  setOrDelete(metadata, 'labels', desired.metadata.labels);
  setOrDelete(metadata, 'annotations', desired.metadata.annotations);
  setOrDelete(metadata, 'ownerReferences', desired.metadata.ownerReferences);
  const object: KubeObject = { ...actual, metadata, spec: desired.spec };
  if (status === undefined) delete object.status;
  else object.status = status;
  return object;
}

/** Other status fields (someone else's) are kept; the conditions are ours. */
function mergedStatus(actual: KubeObject, desired: KubeObject): KubeObject['status'] {
  const status = { ...(actual.status ?? {}) };
  if (desired.status?.conditions) status.conditions = desired.status.conditions;
  else delete status.conditions;
  return status;
}

function setOrDelete<T extends object>(
  target: T,
  key: keyof T,
  value: T[keyof T] | undefined,
): void {
  if (value === undefined) delete target[key];
  else target[key] = value;
}

export function refKey(object: { metadata: { namespace: string; name: string } }): string {
  return `${object.metadata.namespace}/${object.metadata.name}`;
}

function byRef(a: KubeObject, b: KubeObject): number {
  const left = refKey(a);
  const right = refKey(b);
  return left < right ? -1 : left > right ? 1 : 0;
}
