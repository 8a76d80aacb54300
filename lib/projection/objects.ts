import type { Condition, OwnerReference, StringMap } from '../domain/model.ts';

/**
 * The Kubernetes object shapes the projector handles, as plain JSON (what the API server
 * sends and accepts). Only the fields the projector reads or writes are typed.
 */
export interface KubeMeta {
  name: string;
  namespace: string;
  uid?: string;
  resourceVersion?: string;
  labels?: StringMap;
  annotations?: StringMap;
  ownerReferences?: OwnerReference[];
  [field: string]: unknown;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: KubeMeta;
  spec?: unknown;
  status?: { conditions?: Condition[]; [field: string]: unknown };
  [field: string]: unknown;
}

export interface ServicePort {
  name?: string;
  port: number;
  protocol?: string;
  appProtocol?: string;
  targetPort?: number | string;
}

export interface ServiceObject extends KubeObject {
  spec: {
    type?: string;
    selector?: StringMap;
    ports?: ServicePort[];
    clusterIP?: string;
    ipFamilies?: string[];
    publishNotReadyAddresses?: boolean;
  };
}

export type AddressType = 'IPv4' | 'IPv6';

export interface EndpointPort {
  name: string;
  port: number;
  protocol: string;
  appProtocol?: string;
}

export interface Endpoint {
  addresses: string[];
  conditions: { ready: boolean; serving: boolean; terminating: boolean };
  targetRef: { apiVersion: string; kind: string; namespace: string; name: string };
  zone?: string;
}

export interface EndpointSliceObject extends KubeObject {
  addressType: AddressType;
  endpoints: Endpoint[];
  ports: EndpointPort[];
}

/** Drops `undefined` members (deep) so two objects compare equal regardless of them. */
export function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[key];
      // A data property whatever the key: `out[key] =` would set the prototype for `__proto__`
      // (JSON.parse makes it an own key of a cluster object).
      if (member !== undefined) {
        Object.defineProperty(out, key, {
          value: canonical(member),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
    return out;
  }
  return value;
}

/** Deep equality of JSON values; key order and undefined members do not matter. */
export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/** An empty map and an absent one are the same to the API server (`omitempty`). */
export function sameMap(a: StringMap | undefined, b: StringMap | undefined): boolean {
  return sameJson(a ?? {}, b ?? {});
}

export function sameList(a: unknown[] | undefined, b: unknown[] | undefined): boolean {
  return sameJson(a ?? [], b ?? []);
}
