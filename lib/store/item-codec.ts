/**
 * Domain records <-> DynamoDB items of the registry table (layout in docs/architecture.md).
 * Pure: the document client does the attribute-value marshalling; this decides the shape.
 * Times are epoch-millisecond numbers so that conditions can compare them.
 */

import type { AgentGiven } from '../domain/agent-given.ts';
import type {
  ConnectionState,
  CordonState,
  EntryRecord,
  HealthState,
} from '../domain/entry-record.ts';
import type { HolderBeat } from '../domain/holder-heartbeat.ts';
import type {
  EpochMillis,
  ObjectRef,
  VerifiedIdentity,
  WorkloadEntry,
  WorkloadGroup,
} from '../domain/model.ts';
import type { StoredGroup } from '../domain/registry-records.ts';
import type { StoredToken } from '../domain/stored-token.ts';
import type { ConnectionRecord } from '../registration/entry-lifecycle-store.ts';
import { decodeEvents, encodeEvent, type StoredEvent } from './event-codec.ts';
import { SWEEP_SHARDS } from './table-definition.ts';

export type Item = Record<string, unknown>;
// Type aliases, not interfaces: the document client takes `Record<string, ...>`, which an
// interface (having no index signature) does not satisfy.
export type ItemKey = { pk: string; sk: string };

export const ENTRY_PREFIX = 'WE#';
export const GROUP_PREFIX = 'WG#';
export const TOKEN_PARTITION = 'TOKEN';
const NAMESPACE_PREFIX = 'NS#';
const CONNECTION_PREFIX = 'CONN#';
const CONNECTION_SORT_KEY = 'CONN';

export function namespacePartition(namespace: string): string {
  return `${NAMESPACE_PREFIX}${namespace}`;
}
export function entryKey(ref: ObjectRef): ItemKey {
  return { pk: namespacePartition(ref.namespace), sk: `${ENTRY_PREFIX}${ref.name}` };
}
export function groupKey(ref: ObjectRef): ItemKey {
  return { pk: namespacePartition(ref.namespace), sk: `${GROUP_PREFIX}${ref.name}` };
}
export function connectionKey(connectionId: string): ItemKey {
  return { pk: `${CONNECTION_PREFIX}${connectionId}`, sk: CONNECTION_SORT_KEY };
}
const HELD_PREFIX = 'held:';

/** The attribute that records when a holder connected: `held:<connection id>`. */
export function heldAttribute(connectionId: string): string {
  return `${HELD_PREFIX}${connectionId}`;
}

const BEAT_PREFIX = 'beat:';

/**
 * The attribute that records the heartbeat a holder was told and is held to (HolderBeat):
 * `beat:<connection id>`, a map `{i, m, f, n, at}` (interval ms, misses, follows, takes
 * notices, since). Written with `held:` by `$connect`, rewritten by the agent's
 * acknowledgement of a changed heartbeat, removed with `held:`.
 */
export function beatAttribute(connectionId: string): string {
  return `${BEAT_PREFIX}${connectionId}`;
}

/** A HolderBeat as stored: short names, since every holder of every entry carries one. */
export interface StoredBeat {
  i: number;
  m: number;
  f: boolean;
  n: boolean;
  at: EpochMillis;
}

export function encodeBeat(beat: HolderBeat): StoredBeat {
  return {
    i: beat.told.intervalMs,
    m: beat.told.misses,
    f: beat.follows,
    n: beat.notices,
    at: beat.at,
  };
}

/** Each holder's heartbeat, from the `beat:` attributes of an entry item (a bad one is skipped). */
export function holderBeats(item: Record<string, unknown>): Record<string, HolderBeat> {
  const beats: Record<string, HolderBeat> = {};
  for (const [name, value] of Object.entries(item)) {
    if (!name.startsWith(BEAT_PREFIX) || typeof value !== 'object' || value === null) continue;
    const { i, m, f, n, at } = value as Partial<StoredBeat>;
    if (typeof i !== 'number' || typeof m !== 'number' || typeof at !== 'number') continue;
    beats[name.slice(BEAT_PREFIX.length)] = {
      told: { intervalMs: i, misses: m },
      follows: f === true,
      notices: n === true,
      at,
    };
  }
  return beats;
}

const BY_PREFIX = 'by:';

/**
 * The attribute that records who a holder's connect was authenticated as (its principal:
 * `token:<id>`, or the IAM session ARN): `by:<connection id>`. Written with `held:` and removed
 * with it, so revoking a token or a policy finds every connection it authenticated, not only
 * the newest connect's (lib/auth/revocation.ts).
 */
export function holderPrincipalAttribute(connectionId: string): string {
  return `${BY_PREFIX}${connectionId}`;
}

/** Each holder's principal, from the `by:` attributes of an entry item. */
export function holderPrincipals(item: Record<string, unknown>): Record<string, string> {
  const principals: Record<string, string> = {};
  for (const [name, value] of Object.entries(item)) {
    if (name.startsWith(BY_PREFIX) && typeof value === 'string') {
      principals[name.slice(BY_PREFIX.length)] = value;
    }
  }
  return principals;
}

/** Each holder's connect time, from the `held:` attributes of an entry item. */
export function holderTimes(item: Record<string, unknown>): Record<string, EpochMillis> {
  const times: Record<string, EpochMillis> = {};
  for (const [name, value] of Object.entries(item)) {
    if (name.startsWith(HELD_PREFIX) && typeof value === 'number') {
      times[name.slice(HELD_PREFIX.length)] = value;
    }
  }
  return times;
}

export function tokenKey(id: string): ItemKey {
  return { pk: TOKEN_PARTITION, sk: id };
}

/**
 * The sweep index shard of an entry: FNV-1a of `<namespace>/<name>` mod SWEEP_SHARDS. Stable,
 * so an entry stays in one shard for its whole life and every write computes the same key.
 */
export function sweepShard(ref: ObjectRef): number {
  let hash = 0x811c9dc5;
  for (const char of `${ref.namespace}/${ref.name}`) {
    hash ^= char.codePointAt(0) ?? 0;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % SWEEP_SHARDS;
}

/**
 * The sweep index keys shared by every namespace: `C#<shard>` while connected (sweepAt =
 * connectedAt), read in due order by the liveness checks and the stale rule. `L#<shard>` and
 * `D#<shard>` are where release 0.1.0 put departures: still read (and swept) until none is
 * left, never written any more (see departedSweepState).
 */
export function sweepState(state: 'C' | 'D' | 'L', shard: number): string {
  return `${state}#${shard}`;
}

/**
 * The sweep index key of a departed entry (sweepAt = disconnectedAt): `L#<namespace>#<shard>`
 * after a clean departure, `D#<namespace>#<shard>` after an abnormal one. Per namespace, so the
 * sweeper reads each namespace's due departures apart and no namespace's backlog, however
 * large, is read before another's (the fair sweeper, lib/registration/sweep-deletions.ts);
 * clean apart from abnormal, so a clean departure is never behind a held or slowed backlog of
 * its own namespace. Four shards per namespace: 100,000 VMs of one namespace leaving within a
 * minute write ~420/s to each key. '#' is in no namespace (a DNS-1123 label), so a key never
 * reads as another namespace's, nor as 0.1.0's `L#<shard>`.
 */
export function departedSweepState(kind: 'D' | 'L', ref: ObjectRef): string {
  return namespaceSweepState(kind, ref.namespace, sweepShard(ref));
}

export function namespaceSweepState(kind: 'D' | 'L', namespace: string, shard: number): string {
  return `${kind}#${namespace}#${shard}`;
}

/** An entry item as stored. Connection and health state are top-level so updates can set them. */
export type EntryItem = ItemKey & {
  entry: WorkloadEntry;
  revision: number;
  autoRegistrationGroup?: string;
  /** What the name was made from (entryOrigin); a connect with another origin collides. */
  origin?: string;
  healthChecksEnabled?: boolean;
  groupGeneration?: number;
  /** The agent's labels and locality (template rollouts let them win); set on first connect. */
  agentGiven?: AgentGiven;
  identity?: VerifiedIdentity;
  /** The newest connect's agent version (EntryRecord.agentVersion). */
  agentVersion?: string;
  controller?: string;
  connectedAt?: EpochMillis;
  disconnectedAt?: EpochMillis;
  /** How the last holder went away; absent (older entries) reads as abnormal. */
  departure?: 'clean' | 'abnormal';
  /** The EC2 instance of the newest connect (the `instance` index), when known. */
  instanceId?: string;
  /** Set by the agent's `drain`: Healthy False, reason Draining, until a new connect. */
  drainingSince?: EpochMillis;
  /** The holders (a string set; DynamoDB removes it when the last one leaves). */
  conns?: Set<string>;
  /** Connections whose `$disconnect` came before their `$connect` wrote: they hold nothing. */
  departed?: Set<string>;
  newestConnectionId?: string;
  /**
   * While held: when the newest connection that closed cleanly had connected. Holders older
   * than it are leftovers of lost `$disconnect`s, and their going is a clean departure.
   */
  cleanExitSince?: EpochMillis;
  /** The latest refused claim of the address (see EntryRecord.addressConflict). */
  addressConflict?: { at: EpochMillis; claimant: string };
  healthStatus?: 'True' | 'False';
  healthMessage?: string;
  lastProbeTime?: EpochMillis;
  /** When the status became True / False; only the current status's one is kept. */
  healthyTrueSince?: EpochMillis;
  healthyFalseSince?: EpochMillis;
  sweepState?: string;
  sweepAt?: EpochMillis;
  /** An operator's cordon (`registrar cordon`; lib/store/dynamodb-cordon.ts). */
  cordon?: CordonState & { id?: string };
  uncordonedAt?: EpochMillis;
  /** The entry's events, oldest first (lib/store/dynamodb-entry-events.ts). */
  events?: StoredEvent[];
  eventsSince?: EpochMillis;
};

export function encodeEntry(record: EntryRecord): EntryItem {
  const ref = record.entry.metadata;
  const item: EntryItem = { ...entryKey(ref), entry: record.entry, revision: record.revision };
  if (record.autoRegistrationGroup !== undefined) {
    item.autoRegistrationGroup = record.autoRegistrationGroup;
  }
  if (record.healthChecksEnabled !== undefined)
    item.healthChecksEnabled = record.healthChecksEnabled;
  if (record.groupGeneration !== undefined) item.groupGeneration = record.groupGeneration;
  if (record.agentGiven !== undefined) item.agentGiven = record.agentGiven;
  if (record.identity !== undefined) item.identity = record.identity;
  if (record.agentVersion !== undefined) item.agentVersion = record.agentVersion;
  if (record.instanceId !== undefined) item.instanceId = record.instanceId;
  Object.assign(item, encodeConnection(record.connection), encodeHealth(record.health));
  if (record.cordon !== undefined) item.cordon = record.cordon;
  if (record.uncordonedAt !== undefined) item.uncordonedAt = record.uncordonedAt;
  if (record.events !== undefined) item.events = record.events.map(encodeEvent);
  if (record.eventsSince !== undefined) item.eventsSince = record.eventsSince;
  // Only auto-registered entries enter the sparse sweep index: hand-made ones are never swept.
  const connection = record.connection;
  if (record.autoRegistrationGroup !== undefined && connection !== undefined) {
    const shard = sweepShard(ref);
    if (connection.connectedAt !== undefined) {
      item.sweepState = sweepState('C', shard);
      item.sweepAt = connection.connectedAt;
    } else if (connection.disconnectedAt !== undefined) {
      item.sweepState = departedSweepState(connection.departure === 'clean' ? 'L' : 'D', ref);
      item.sweepAt = connection.disconnectedAt;
    }
  }
  return item;
}

function encodeConnection(connection: ConnectionState | undefined): Partial<EntryItem> {
  if (!connection) return {};
  const fields: Partial<EntryItem> = { controller: connection.controller };
  if (connection.connectedAt !== undefined) fields.connectedAt = connection.connectedAt;
  if (connection.disconnectedAt !== undefined) fields.disconnectedAt = connection.disconnectedAt;
  if (connection.departure !== undefined) fields.departure = connection.departure;
  // DynamoDB has no empty sets: no live connection is an absent attribute.
  if (connection.connectionIds.length > 0) fields.conns = new Set(connection.connectionIds);
  for (const [id, since] of Object.entries(connection.holderSince ?? {})) {
    (fields as Record<string, unknown>)[heldAttribute(id)] = since;
  }
  for (const [id, beat] of Object.entries(connection.holderBeats ?? {})) {
    (fields as Record<string, unknown>)[beatAttribute(id)] = encodeBeat(beat);
  }
  if (connection.newestConnectionId !== undefined) {
    fields.newestConnectionId = connection.newestConnectionId;
  }
  return fields;
}

function encodeHealth(health: HealthState | undefined): Partial<EntryItem> {
  if (!health) return {};
  const fields: Partial<EntryItem> = {
    healthStatus: health.status,
    lastProbeTime: health.lastProbeTime,
  };
  if (health.message !== undefined) fields.healthMessage = health.message;
  if (health.status === 'True') fields.healthyTrueSince = health.lastTransitionTime;
  else fields.healthyFalseSince = health.lastTransitionTime;
  return fields;
}

export function decodeEntry(raw: Item): EntryRecord {
  const item = raw as EntryItem;
  const record: EntryRecord = { entry: item.entry, revision: item.revision };
  if (item.autoRegistrationGroup !== undefined) {
    record.autoRegistrationGroup = item.autoRegistrationGroup;
  }
  if (item.healthChecksEnabled !== undefined) record.healthChecksEnabled = item.healthChecksEnabled;
  if (item.groupGeneration !== undefined) record.groupGeneration = item.groupGeneration;
  if (item.agentGiven !== undefined) record.agentGiven = item.agentGiven;
  if (item.identity !== undefined) record.identity = item.identity;
  if (item.agentVersion !== undefined) record.agentVersion = item.agentVersion;
  if (item.instanceId !== undefined) record.instanceId = item.instanceId;
  if (item.addressConflict !== undefined) record.addressConflict = item.addressConflict;
  if (item.cordon !== undefined) {
    record.cordon = { at: item.cordon.at, message: item.cordon.message };
  }
  if (item.uncordonedAt !== undefined) record.uncordonedAt = item.uncordonedAt;
  if (item.events !== undefined) record.events = decodeEvents(item.events);
  if (item.eventsSince !== undefined) record.eventsSince = item.eventsSince;
  if (item.controller !== undefined) {
    const connectionIds = [...(item.conns ?? [])].sort();
    const times = holderTimes(raw);
    const beats = holderBeats(raw);
    const connection: ConnectionState = {
      controller: item.controller,
      connectionIds,
      holderSince: Object.fromEntries(
        connectionIds.flatMap((id) => (times[id] === undefined ? [] : [[id, times[id]]])),
      ),
    };
    const told = connectionIds.flatMap((id) => (beats[id] ? [[id, beats[id]] as const] : []));
    if (told.length > 0) connection.holderBeats = Object.fromEntries(told);
    if (item.connectedAt !== undefined) connection.connectedAt = item.connectedAt;
    if (item.disconnectedAt !== undefined) connection.disconnectedAt = item.disconnectedAt;
    if (item.departure !== undefined) connection.departure = item.departure;
    if (item.newestConnectionId !== undefined) {
      connection.newestConnectionId = item.newestConnectionId;
    }
    record.connection = connection;
  }
  const health = decodeHealth(item);
  if (health) record.health = health;
  return record;
}

/** The `Healthy` condition's reason while the agent drains. */
export const DRAINING_REASON = 'Draining';

/** The `Healthy` condition's message a drain writes (dynamodb-health-writes.ts). */
export const DRAINING_MESSAGE = 'the VM is shutting down (drain)';

function decodeHealth(item: EntryItem): HealthState | undefined {
  if (item.healthStatus === undefined || item.lastProbeTime === undefined) return undefined;
  // A planned restart of a VM whose group has no probe (`systemctl restart`): the drain set
  // Healthy False, and the new process's connect cancelled the drain (removed drainingSince).
  // The drain's False is meant to last until the agent's next report, but an agent without a
  // probe sends none: read as it was before the drain (no health; connected is routable), or
  // the VM would stay out of the mesh for good after its first restart.
  if (
    item.drainingSince === undefined &&
    item.healthChecksEnabled !== true &&
    item.healthStatus === 'False' &&
    item.healthMessage === DRAINING_MESSAGE
  ) {
    return undefined;
  }
  const since = item.healthStatus === 'True' ? item.healthyTrueSince : item.healthyFalseSince;
  const health: HealthState = {
    status: item.healthStatus,
    lastProbeTime: item.lastProbeTime,
    lastTransitionTime: since ?? item.lastProbeTime,
  };
  if (item.drainingSince !== undefined) health.reason = DRAINING_REASON;
  if (item.healthMessage !== undefined) health.message = item.healthMessage;
  return health;
}

/** A group item: the Istio object (with uid and generation), plus its optimistic-lock revision. */
export type GroupItem = ItemKey & {
  group: WorkloadGroup;
  generation: number;
  revision: number;
};

/**
 * Every attribute a group item has as the catalog writes it (`writeId`: the put's own id, see
 * DynamoDbCatalog). The group sync's IAM grant allows writes of these attributes only
 * (`dynamodb:Attributes`), so the projector cannot write an entry's state; a test keeps this
 * list and encodeGroup in step.
 */
export const GROUP_ITEM_ATTRIBUTES = [
  'pk',
  'sk',
  'group',
  'generation',
  'revision',
  'writeId',
] as const;

export function encodeGroup(stored: StoredGroup, revision: number): GroupItem {
  const group: WorkloadGroup = {
    ...stored.group,
    metadata: { ...stored.group.metadata, generation: stored.generation },
  };
  return { ...groupKey(stored.group.metadata), group, generation: stored.generation, revision };
}

export function decodeGroup(raw: Item): StoredGroup {
  const item = raw as GroupItem;
  return { group: item.group, generation: item.generation };
}

export type ConnectionItem = ItemKey & {
  namespace: string;
  name: string;
  connectedAt: EpochMillis;
  /** Epoch seconds: the table's TTL attribute removes records of connections long gone. */
  expiresAt: number;
};

/** The TTL attribute of the registry table (connection records only). */
export const EXPIRES_AT_ATTRIBUTE = 'expiresAt';

/**
 * A connection lives at most API Gateway's 2 h; its record is kept a day, so a `$disconnect`
 * delivered late still finds it, and then expires (a lost `$disconnect` never deletes it).
 */
const CONNECTION_RECORD_TTL_MS = 24 * 3_600_000;

export function encodeConnectionRecord(record: ConnectionRecord): ConnectionItem {
  return {
    ...connectionKey(record.connectionId),
    namespace: record.entry.namespace,
    name: record.entry.name,
    connectedAt: record.connectedAt,
    expiresAt: Math.ceil((record.connectedAt + CONNECTION_RECORD_TTL_MS) / 1000),
  };
}

export function decodeConnectionRecord(raw: Item): ConnectionRecord {
  const item = raw as ConnectionItem;
  return {
    connectionId: item.pk.slice(CONNECTION_PREFIX.length),
    entry: { namespace: item.namespace, name: item.name },
    connectedAt: item.connectedAt,
  };
}

/**
 * A token's expiry is `validUntil` (epoch milliseconds), never the table's TTL attribute
 * (`expiresAt`, epoch seconds): an expired or revoked token stays listed until the operator
 * deletes it. Tokens written before carry their expiry, in milliseconds, as `expiresAt`; they
 * are read the same way (TTL reads that value as a date past year 50,000 and keeps them).
 */
export type TokenItem = ItemKey &
  Omit<StoredToken, 'id' | 'expiresAt'> & { validUntil: EpochMillis; expiresAt?: never };

export function encodeToken(token: StoredToken): TokenItem {
  const { id, expiresAt, ...rest } = token;
  return { ...tokenKey(id), ...rest, validUntil: expiresAt };
}

export function decodeToken(raw: Item): StoredToken {
  const { pk: _pk, sk, validUntil, [EXPIRES_AT_ATTRIBUTE]: legacyExpiry, ...rest } = raw;
  return { id: sk, ...rest, expiresAt: validUntil ?? legacyExpiry } as StoredToken;
}
