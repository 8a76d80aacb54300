/**
 * The conditional writes of the lifecycle, as request inputs. Each condition is the rule it
 * enforces; the store sends them and turns a failed condition into an outcome. Kept apart from
 * the store so tests can pin the exact request (ConditionExpression included).
 *
 * Holders: `conns` is the string set of connections holding an auto-registered entry; an
 * entry is connected while it has one. Beside it, `held:<connection id>` records when each
 * holder connected, so a liveness check can tell a connection still in its `$connect` (which
 * API Gateway also answers 410 for) from one that is gone, and `by:<connection id>` who it was
 * authenticated as, so a revoked token or policy finds the connections it let in. All change
 * in the same write.
 * `departed` lists connections whose `$disconnect` was processed before their `$connect`
 * wrote (API Gateway runs them in any order): their connect must not make them holders.
 */
import type { DeleteCommandInput, UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { DepartureKind } from '../domain/disruption.ts';
import type { EntryEvent } from '../domain/entry-events.ts';
import type { ObjectRef, VerifiedIdentity } from '../domain/model.ts';
import type { ConnectChange } from '../registration/entry-lifecycle-store.ts';
import { withEntryEvent } from './dynamodb-entry-events.ts';
import { EVENTS_SINCE_ATTRIBUTE } from './event-codec.ts';
import {
  beatAttribute,
  departedSweepState,
  encodeBeat,
  entryKey,
  heldAttribute,
  holderPrincipalAttribute,
  sweepShard,
  sweepState,
} from './item-codec.ts';
import { zonePartition } from './table-definition.ts';

const NAMES = {
  '#entry': 'entry',
  '#spec': 'spec',
  '#sa': 'serviceAccount',
};

/**
 * Who may control an existing auto-registered entry (rule 6, Istio's
 * `ensureProxyCanControlEntry`): its namespace is the key, so only the service account is left
 * to check. An entry with one is controlled only by a caller with exactly that one; a caller
 * without one (a namespace-wide token) controls only entries without one. Checked in the
 * write itself, not against the group the caller names: the group's template may have
 * changed since the entry was built.
 */
function mayControl(identity: VerifiedIdentity): { condition: string; values: object } {
  const unset = 'attribute_not_exists(#entry.#spec.#sa) OR #entry.#spec.#sa = :noAccount';
  if (identity.serviceAccount === undefined) {
    return { condition: `(${unset})`, values: { ':noAccount': '' } };
  }
  return {
    condition: `(${unset} OR #entry.#spec.#sa = :account)`,
    values: { ':noAccount': '', ':account': identity.serviceAccount },
  };
}

/** What every connect to an existing entry must satisfy, whatever its order. */
function joinable(change: ConnectChange): { condition: string; values: object } {
  const control = mayControl(change.identity);
  return {
    condition:
      'attribute_exists(autoRegistrationGroup)' +
      ' AND (attribute_not_exists(origin) OR origin = :origin)' +
      ` AND ${control.condition}` +
      ' AND NOT contains(departed, :connection)',
    values: { ':origin': change.origin, ':connection': change.connectionId, ...control.values },
  };
}

/**
 * Connect as the newest connect: create the entry from the template (when the caller may),
 * or add this connection to its holders and record it as the newest connect.
 * - Template fields use `if_not_exists`: a reconnect never rewrites spec, labels or status.
 *   So does `agentGiven` (the agent's labels and locality, which a template rollout lets win):
 *   an entry of a release before rollouts gets it from its first connect after the upgrade.
 * - `ADD conns`: every accepted connect holds the entry (rule 8); during a make-before-break
 *   rotation the old connection stays listed until its own `$disconnect`.
 * - `connectedAt <= :at`: only the newest connect sets the connect time (and the sweep index
 *   key): an older one processed late must not make the entry look older than it is. Equal
 *   times (two connects in one millisecond) both pass, and so does the SDK's retry of this
 *   very write after a lost response.
 * - A connect ends a departure (`departure`) and cancels a drain (`drainingSince`): the VM is
 *   back. The instance id is the newest connect's (removed when it names none), so an EC2
 *   event about an instance that no longer holds the entry cannot remove it.
 * - ALL_OLD returns the old item only when the entry existed: created vs reconnected, and
 *   whether it was connected before (the zone counters change only when it was not; the
 *   Reconnected event is written only then).
 * - `eventsSince` marks, once, since when the entry's events are recorded: a new entry's
 *   history starts at its creation, and an entry of an older release keeps what its state
 *   says of the time before (lib/domain/entry-history.ts). A rotation records no event.
 */
export function connectAsNewest(tableName: string, change: ConnectChange): UpdateCommandInput {
  const ref: ObjectRef = change.entry.metadata;
  const join = joinable(change);
  const instance = change.instanceId !== undefined;
  const given = change.agentGiven !== undefined;
  const version = change.agentVersion !== undefined;
  const beat = change.heartbeat !== undefined;
  return {
    TableName: tableName,
    Key: entryKey(ref),
    UpdateExpression: [
      'SET #entry = if_not_exists(#entry, :entry)',
      'autoRegistrationGroup = if_not_exists(autoRegistrationGroup, :group)',
      'origin = if_not_exists(origin, :origin)',
      'healthChecksEnabled = if_not_exists(healthChecksEnabled, :healthChecksEnabled)',
      'groupGeneration = if_not_exists(groupGeneration, :groupGeneration)',
      ...(given ? ['agentGiven = if_not_exists(agentGiven, :agentGiven)'] : []),
      '#identity = :identity, controller = :controller, connectedAt = :at',
      'newestConnectionId = :connection, sweepState = :sweepState, sweepAt = :at, #held = :at',
      '#by = :principal',
      `${EVENTS_SINCE_ATTRIBUTE} = if_not_exists(${EVENTS_SINCE_ATTRIBUTE}, :at)`,
      ...(instance ? ['instanceId = :instanceId'] : []),
      ...(version ? ['agentVersion = :agentVersion'] : []),
      ...(beat ? ['#beat = :beat'] : []),
    ]
      .join(', ')
      .concat(
        ` REMOVE disconnectedAt, departure, drainingSince${instance ? '' : ', instanceId'}`,
        ' ADD conns :connections, revision :one',
      ),
    ConditionExpression:
      `${change.mayCreate ? 'attribute_not_exists(pk) OR ' : 'attribute_exists(pk) AND '}` +
      `(${join.condition} AND (attribute_not_exists(connectedAt) OR connectedAt <= :at))`,
    ExpressionAttributeNames: {
      ...NAMES,
      '#identity': 'identity',
      '#held': heldAttribute(change.connectionId),
      '#by': holderPrincipalAttribute(change.connectionId),
      ...(beat ? { '#beat': beatAttribute(change.connectionId) } : {}),
    },
    ExpressionAttributeValues: {
      ...join.values,
      ':entry': change.entry,
      ':group': change.autoRegistrationGroup,
      ':healthChecksEnabled': change.healthChecksEnabled,
      ':groupGeneration': change.groupGeneration,
      ':identity': change.identity,
      ':principal': change.identity.principal,
      ':controller': change.controller,
      ':at': change.connectedAt,
      ':sweepState': sweepState('C', sweepShard(ref)),
      ':connections': new Set([change.connectionId]),
      ':one': 1,
      ...(instance ? { ':instanceId': change.instanceId } : {}),
      ...(given ? { ':agentGiven': change.agentGiven } : {}),
      ...(version ? { ':agentVersion': change.agentVersion } : {}),
      ...(change.heartbeat ? { ':beat': encodeBeat(change.heartbeat) } : {}),
    },
    ReturnValues: 'ALL_OLD',
  };
}

/**
 * Connect older than the entry's newest connect (API Gateway ran it late, or a retry): the
 * connection is live all the same, so it becomes a holder; the connect time, identity and
 * sweep key stay the newer connect's. Only an entry that is connected can have a newer
 * connect, so nothing else changes.
 */
export function connectAsOlder(tableName: string, change: ConnectChange): UpdateCommandInput {
  const join = joinable(change);
  const beat = change.heartbeat;
  return {
    TableName: tableName,
    Key: entryKey(change.entry.metadata),
    UpdateExpression: `SET #held = :at, #by = :principal${beat ? ', #beat = :beat' : ''} ADD conns :connections, revision :one`,
    ConditionExpression: `${join.condition} AND connectedAt > :at`,
    ExpressionAttributeNames: {
      ...NAMES,
      '#held': heldAttribute(change.connectionId),
      '#by': holderPrincipalAttribute(change.connectionId),
      ...(beat ? { '#beat': beatAttribute(change.connectionId) } : {}),
    },
    ExpressionAttributeValues: {
      ...join.values,
      ':at': change.connectedAt,
      ':principal': change.identity.principal,
      ':connections': new Set([change.connectionId]),
      ':one': 1,
      ...(beat ? { ':beat': encodeBeat(beat) } : {}),
    },
  };
}

/**
 * The last holders leave: mark the entry disconnected (keeping `workloadController`) and move
 * it to the disconnected sweep shard keyed by the time. Condition: exactly these connections
 * are the holders. Used by `$disconnect` (one connection) and by a liveness check that found
 * every remaining holder gone. Tombstones stay: they live as long as the entry. How they left
 * is recorded (`departure`) and picks the sweep index key: `L#<namespace>#` (clean) or
 * `D#<namespace>#` (abnormal).
 * ALL_OLD returns the entry's locality, for its zone's counters.
 */
export function leaveAsLast(
  tableName: string,
  ref: ObjectRef,
  connectionIds: readonly string[],
  at: number,
  departure: DepartureKind = 'abnormal',
  cleanExit?: CleanExitGuard,
  event?: EntryEvent,
): UpdateCommandInput {
  const values: Record<string, unknown> = {
    ':at': at,
    ':departure': departure,
    ':sweepState': departedSweepState(departure === 'clean' ? 'L' : 'D', ref),
    ':connections': new Set(connectionIds),
    ':count': connectionIds.length,
    ':one': 1,
  };
  const holders = leavingHolders(connectionIds, values);
  let guard = '';
  if (cleanExit) {
    values[':since'] = cleanExit.since;
    guard =
      cleanExit.newer === 'none'
        ? ' AND (attribute_not_exists(cleanExitSince) OR cleanExitSince < :since)'
        : ' AND cleanExitSince >= :since';
  }
  return withOptionalEvent(
    {
      TableName: tableName,
      Key: entryKey(ref),
      UpdateExpression:
        'SET disconnectedAt = :at, departure = :departure, sweepState = :sweepState, sweepAt = :at' +
        ` REMOVE connectedAt, newestConnectionId, cleanExitSince, ${holders.remove}` +
        ' DELETE conns :connections ADD revision :one',
      ConditionExpression: `size(conns) = :count AND ${holders.condition}${guard}`,
      ExpressionAttributeNames: holders.names,
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_OLD',
    },
    event,
  );
}

/** The write, with the event appended when there is one (see withEntryEvent). */
function withOptionalEvent(input: UpdateCommandInput, event: EntryEvent | undefined) {
  return event ? withEntryEvent(input, event) : input;
}

/**
 * A departure is as clean as the VM's last live connection. A `$disconnect` can be lost (a
 * crash of the registrar, a failed write), leaving an older connection listed as a holder;
 * when the VM's newest connection then closes cleanly, the entry stays held by that phantom,
 * and the liveness check that later drops it would call the departure abnormal and hold it
 * back. So a clean close that leaves other holders records when its connection connected
 * (`cleanExitSince`), and the last holder to go, if it connected before that, leaves cleanly.
 * - newer 'none': this last holder leaves abnormally only if no newer connection left cleanly;
 * - newer 'clean': it leaves cleanly because a connection newer than it (or as new) did.
 */
export interface CleanExitGuard {
  /** When the last holder connected. */
  since: number;
  newer: 'none' | 'clean';
}

/**
 * Records a clean close of a connection that left other holders behind (see CleanExitGuard).
 * Only while the entry is still held, and only forward: an older clean close arriving late
 * never moves the mark back.
 */
export function cleanExitUpdate(tableName: string, ref: ObjectRef, since: number) {
  return {
    TableName: tableName,
    Key: entryKey(ref),
    UpdateExpression: 'SET cleanExitSince = :since',
    ConditionExpression:
      'attribute_exists(conns) AND (attribute_not_exists(cleanExitSince) OR cleanExitSince < :since)',
    ExpressionAttributeValues: { ':since': since },
  } satisfies UpdateCommandInput;
}

/**
 * Some holders leave and at least one stays: forget only them; the entry stays connected.
 * `size(conns) > :count` guards two connections closing at once: without it both could take
 * this path and leave an entry that nobody holds still marked connected. ALL_NEW returns the
 * holders left, for the liveness check of the phantom holders among them.
 */
export function leaveAsOneOfMany(
  tableName: string,
  ref: ObjectRef,
  connectionIds: readonly string[],
  event?: EntryEvent,
): UpdateCommandInput {
  const values: Record<string, unknown> = {
    ':connections': new Set(connectionIds),
    ':count': connectionIds.length,
    ':one': 1,
  };
  const holders = leavingHolders(connectionIds, values);
  return withOptionalEvent(
    {
      TableName: tableName,
      Key: entryKey(ref),
      UpdateExpression: `REMOVE ${holders.remove} DELETE conns :connections ADD revision :one`,
      ConditionExpression: `size(conns) > :count AND ${holders.condition}`,
      ExpressionAttributeNames: holders.names,
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    },
    event,
  );
}

/**
 * Each leaving connection must be a holder; its `held:` time, `by:` principal and `beat:`
 * heartbeat go with it.
 */
function leavingHolders(connectionIds: readonly string[], values: Record<string, unknown>) {
  const names: Record<string, string> = {};
  const conditions: string[] = [];
  const removes: string[] = [];
  connectionIds.forEach((id, i) => {
    values[`:c${i}`] = id;
    names[`#h${i}`] = heldAttribute(id);
    names[`#b${i}`] = holderPrincipalAttribute(id);
    names[`#t${i}`] = beatAttribute(id);
    conditions.push(`contains(conns, :c${i})`);
    removes.push(`#h${i}`, `#b${i}`, `#t${i}`);
  });
  return { names, condition: conditions.join(' AND '), remove: removes.join(', ') };
}

/**
 * A `$disconnect` found its connection among no holders: remember it, so that its `$connect`,
 * if API Gateway runs it after this, holds nothing (rule 8). Without the revision bump: a
 * tombstone changes nothing anyone sees, and must not make the sweeper's delete lose.
 */
export function tombstone(
  tableName: string,
  ref: ObjectRef,
  connectionId: string,
): UpdateCommandInput {
  return {
    TableName: tableName,
    Key: entryKey(ref),
    UpdateExpression: 'ADD departed :connections',
    ConditionExpression: 'attribute_exists(autoRegistrationGroup) AND NOT contains(conns, :c)',
    ExpressionAttributeValues: { ':connections': new Set([connectionId]), ':c': connectionId },
  };
}

/** The key of one of a cell's counter items (`cell`: `<namespace>#<zone>`, see cellKey). */
export function zoneKey(cell: string, shard: number) {
  return { pk: zonePartition(shard), sk: cell };
}

/**
 * Moves a cell's counters (`connected`, `away`) by the given amounts: ADD creates the item
 * and the attributes on first use. Not conditional: each call follows one entry write that
 * succeeded, so only an SDK retry after a lost response can count twice (see
 * docs/architecture.md, "Fail static", on drift).
 */
export function zoneCountUpdate(
  tableName: string,
  cell: string,
  shard: number,
  delta: { connected?: number; away?: number; left?: number },
  op: string,
): UpdateCommandInput | undefined {
  const adds: string[] = [];
  const values: Record<string, number | string> = { ':op': op };
  // Named through placeholders: `left` is one of DynamoDB's reserved words.
  const names: Record<string, string> = {};
  for (const counter of ['connected', 'away', 'left'] as const) {
    const by = delta[counter];
    if (!by) continue;
    adds.push(`#${counter} :${counter}`);
    names[`#${counter}`] = counter;
    values[`:${counter}`] = by;
  }
  if (adds.length === 0) return undefined;
  // `op` names the entry transition being counted. An SDK retry of an ADD whose response was
  // lost finds its own op as the last one and changes nothing, where it would count twice.
  // (Only the last op is kept: a retry after another transition of the zone still counts
  // twice; the decision tolerates a drift of a few.)
  return {
    TableName: tableName,
    Key: zoneKey(cell, shard),
    UpdateExpression: `ADD ${adds.join(', ')} SET lastOp = :op`,
    ConditionExpression: 'attribute_not_exists(lastOp) OR lastOp <> :op',
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/**
 * EC2 says the instance is shutting down or terminated: delete its entry now, whatever its
 * state, never held. Conditional on the entry still naming that instance: a newer connect
 * from another instance (the same address reused) has replaced it and keeps the entry.
 */
export function instanceGoneDelete(
  tableName: string,
  ref: ObjectRef,
  instanceId: string,
): DeleteCommandInput {
  return {
    TableName: tableName,
    Key: entryKey(ref),
    ConditionExpression: 'instanceId = :instanceId AND attribute_exists(autoRegistrationGroup)',
    ExpressionAttributeValues: { ':instanceId': instanceId },
    ReturnValues: 'ALL_OLD',
  };
}
