import type { OwnerReference, StringMap } from '../domain/model.ts';
import { type EndpointGroup, portMapKey } from './desired-endpoints.ts';
import {
  apiVersionOf,
  HEADLESS_LABEL,
  MANAGED_BY_LABEL,
  MANAGER,
  SERVICE_NAME_LABEL,
  SLICE_MANAGED_BY_LABEL,
  SLICE_MANAGER,
} from './kinds.ts';
import {
  type Endpoint,
  type EndpointSliceObject,
  type ServiceObject,
  sameJson,
  sameList,
  sameMap,
} from './objects.ts';

/** The EndpointSlice controller's default `--max-endpoints-per-slice`. */
export const MAX_ENDPOINTS_PER_SLICE = 100;

export interface SlicePlan {
  create: EndpointSliceObject[];
  /** Existing slices with new content, carrying the resourceVersion they were read at. */
  update: EndpointSliceObject[];
  delete: EndpointSliceObject[];
}

export interface SlicePlanInput {
  namespace: string;
  serviceName: string;
  /** Undefined when the Service is gone or no longer selects entries: its slices go. */
  service: ServiceObject | undefined;
  groups: readonly EndpointGroup[];
  /** Our slices for this Service (label kubernetes.io/service-name). */
  existing: readonly EndpointSliceObject[];
  /** Every slice name in use in the namespace, so a new name never collides. */
  takenNames: ReadonlySet<string>;
  maxEndpointsPerSlice?: number;
}

/**
 * The Kubernetes EndpointSlice controller's reconcile (pkg/controller/endpointslice
 * reconciler, `reconcileByPortMapping` and `finalize`), made deterministic:
 * 1. in each existing slice keep the endpoints still desired (updated in place), drop the rest;
 * 2. fill the slices already being updated, fullest first;
 * 3. put what is left in the unchanged slice that fits it most closely, else in new slices;
 * 4. a slice to delete and one to create of the same address type become one update.
 * So a change touches as few slices as it can, and existing slices are reused before new
 * ones are created (fewer objects for every watcher of EndpointSlices to process).
 */
export function planServiceSlices(input: SlicePlanInput): SlicePlan {
  const max = input.maxEndpointsPerSlice ?? MAX_ENDPOINTS_PER_SLICE;
  const service = input.service;
  const plan: SlicePlan = { create: [], update: [], delete: [] };
  const existing = [...input.existing].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  if (!service) return { ...plan, delete: existing };

  const meta = sliceMetadata(service);
  const byKey = new Map<string, EndpointSliceObject[]>();
  for (const slice of existing) {
    const key = portMapKey(slice.addressType, slice.ports ?? []);
    byKey.set(key, [...(byKey.get(key) ?? []), slice]);
  }
  const wanted = new Set(input.groups.map((group) => group.key));
  for (const [key, slices] of byKey) if (!wanted.has(key)) plan.delete.push(...slices);

  const fresh: EndpointSliceObject[] = [];
  for (const group of input.groups) {
    const desired = new Map(group.endpoints.map((endpoint) => [endpointKey(endpoint), endpoint]));
    const updates: EndpointSliceObject[] = [];
    const unchanged: EndpointSliceObject[] = [];
    for (const slice of byKey.get(group.key) ?? []) {
      const kept: Endpoint[] = [];
      let changed = false;
      for (const endpoint of slice.endpoints ?? []) {
        const want = desired.get(endpointKey(endpoint));
        // A second copy of an endpoint (two projectors raced) is dropped like a removed one.
        if (!want) continue;
        kept.push(want);
        if (!sameJson(want, endpoint)) changed = true;
        desired.delete(endpointKey(endpoint));
      }
      const removed = kept.length !== (slice.endpoints ?? []).length;
      if (removed && kept.length === 0) plan.delete.push(slice);
      else if (changed || removed || !sameMetadata(slice, meta))
        updates.push(withEndpoints(slice, meta, kept));
      else unchanged.push(slice);
    }
    const remaining = [...desired.values()];
    // 2. Fill the slices that are written anyway, fullest first.
    for (const slice of [...updates].sort((a, b) => b.endpoints.length - a.endpoints.length)) {
      while (remaining.length > 0 && slice.endpoints.length < max)
        slice.endpoints.push(remaining.shift() as Endpoint);
    }
    // 3. The rest: into the unchanged slice that fits them best, else into new slices.
    while (remaining.length > 0) {
      const fit = remaining.length < max ? closestFit(unchanged, remaining.length, max) : undefined;
      let slice: EndpointSliceObject;
      if (fit) {
        unchanged.splice(unchanged.indexOf(fit), 1);
        slice = withEndpoints(fit, meta, [...fit.endpoints]);
        updates.push(slice);
      } else {
        slice = newSlice(service, meta, group);
        fresh.push(slice);
      }
      while (remaining.length > 0 && slice.endpoints.length < max)
        slice.endpoints.push(remaining.shift() as Endpoint);
    }
    plan.update.push(...updates);
  }
  // 4. Reuse a slice being deleted for a new one of the same address type (addressType is
  // immutable): an update instead of a delete and a create.
  for (const slice of fresh) {
    const reuse = plan.delete.findIndex((old) => old.addressType === slice.addressType);
    if (reuse >= 0) {
      const [old] = plan.delete.splice(reuse, 1) as [EndpointSliceObject];
      plan.update.push({
        ...slice,
        metadata: { ...old.metadata, ...slice.metadata, name: old.metadata.name },
      });
    } else {
      plan.create.push(slice);
    }
  }
  nameNewSlices(plan.create, input);
  return plan;
}

interface SliceMetadata {
  labels: StringMap;
  ownerReferences: OwnerReference[];
}

/** Labels as the controller sets them (the Service's own, then the reserved ones) plus ours. */
export function sliceMetadata(service: ServiceObject): SliceMetadata {
  const labels: StringMap = { ...(service.metadata.labels ?? {}) };
  delete labels[HEADLESS_LABEL];
  if (service.spec.clusterIP === 'None') labels[HEADLESS_LABEL] = '';
  labels[SERVICE_NAME_LABEL] = service.metadata.name;
  labels[SLICE_MANAGED_BY_LABEL] = SLICE_MANAGER;
  labels[MANAGED_BY_LABEL] = MANAGER;
  const owner: OwnerReference = {
    apiVersion: 'v1',
    kind: 'Service',
    name: service.metadata.name,
    uid: service.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
  return { labels, ownerReferences: [owner] };
}

function sameMetadata(slice: EndpointSliceObject, meta: SliceMetadata): boolean {
  return (
    sameMap(slice.metadata.labels, meta.labels) &&
    sameList(slice.metadata.ownerReferences, meta.ownerReferences)
  );
}

function withEndpoints(
  slice: EndpointSliceObject,
  meta: SliceMetadata,
  endpoints: Endpoint[],
): EndpointSliceObject {
  return { ...slice, metadata: { ...slice.metadata, ...meta }, endpoints };
}

function newSlice(
  service: ServiceObject,
  meta: SliceMetadata,
  group: EndpointGroup,
): EndpointSliceObject {
  return {
    apiVersion: apiVersionOf('EndpointSlice'),
    kind: 'EndpointSlice',
    metadata: { name: '', namespace: service.metadata.namespace, ...meta },
    addressType: group.addressType,
    endpoints: [],
    ports: group.ports,
  };
}

/** The controller's getSliceToFill: the slice with room for all of them and least to spare. */
function closestFit(
  slices: EndpointSliceObject[],
  count: number,
  max: number,
): EndpointSliceObject | undefined {
  let best: EndpointSliceObject | undefined;
  let bestSpare = max;
  for (const slice of slices) {
    const spare = max - (count + slice.endpoints.length);
    if (spare >= 0 && spare < bestSpare) {
      best = slice;
      bestSpare = spare;
    }
  }
  return best;
}

function endpointKey(endpoint: Endpoint): string {
  const ref = endpoint.targetRef;
  return ref ? `${ref.kind}/${ref.name}` : `address/${endpoint.addresses?.[0] ?? ''}`;
}

/**
 * Names like the controller's generateName `<service>-<5 chars>`, but derived from the
 * Service and a counter instead of random: two projectors creating "the next slice" at the
 * same time pick the same name, so one of them gets 409 AlreadyExists and re-reads instead of
 * both creating a slice with the same endpoints.
 */
function nameNewSlices(slices: EndpointSliceObject[], input: SlicePlanInput): void {
  const taken = new Set(input.takenNames);
  const base = `${input.serviceName}-`.slice(0, 58);
  let counter = 0;
  for (const slice of slices) {
    let name: string;
    do {
      name = `${base}${suffix(`${input.namespace}/${input.serviceName}/${counter}`)}`;
      counter += 1;
    } while (taken.has(name));
    taken.add(name);
    slice.metadata.name = name;
  }
}

// Kubernetes' generateName alphabet (no vowels, no look-alikes).
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

function suffix(seed: string): string {
  let out = '';
  for (let i = 0; i < 5; i += 1) out += ALPHABET[fnv1a(`${seed}#${i}`) % ALPHABET.length];
  return out;
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const char of text) {
    hash ^= char.codePointAt(0) ?? 0;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
