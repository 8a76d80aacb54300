import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { EntryRecord } from '../domain/entry-record.ts';
import type { ObjectRef, WorkloadEntry, WorkloadGroup } from '../domain/model.ts';
import type { SweepCutoffs } from '../domain/sweep-policy.ts';
import { DynamoDbCatalog } from './dynamodb-catalog.ts';
import { isConditionFailed, queryItems } from './dynamodb-client.ts';
import {
  connectUpdate,
  disconnectOneOfManyUpdate,
  disconnectSoleUpdate,
  healthUpdate,
} from './dynamodb-entry-writes.ts';
import {
  connectionKey,
  decodeConnectionRecord,
  decodeEntry,
  encodeConnectionRecord,
  entryKey,
  sweepState,
} from './item-codec.ts';
import type {
  CatalogStore,
  ConnectChange,
  ConnectionRecord,
  ConnectOutcome,
  DisconnectChange,
  DisconnectResult,
  HealthReport,
  HealthResult,
  RegistryStore,
  StoredGroup,
} from './registry-store.ts';
import { SWEEP_INDEX, SWEEP_SHARDS } from './table-definition.ts';

/** Rounds of the two disconnect writes before giving up; only concurrent churn needs a second. */
const DISCONNECT_ROUNDS = 3;

/**
 * The registry on one DynamoDB table (docs/architecture.md). Each lifecycle event is one
 * conditional write on the entry, plus the connection record; a lost condition is an outcome.
 */
export class DynamoDbRegistryStore implements RegistryStore, CatalogStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #catalog: DynamoDbCatalog;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
    this.#catalog = new DynamoDbCatalog(client, tableName);
  }

  getGroup(ref: ObjectRef): Promise<StoredGroup | undefined> {
    return this.#catalog.getGroup(ref);
  }

  /**
   * One upsert (see `connectUpdate`), then the connection record. The record is written second:
   * API Gateway delivers `$disconnect` only after `$connect` returned, so no disconnect can look
   * for it in between, and a refused connect leaves nothing to clean up.
   */
  async connect(change: ConnectChange): Promise<ConnectOutcome> {
    const ref = { namespace: change.entry.metadata.namespace, name: change.entry.metadata.name };
    const outcome = await this.#upsertEntry(change, ref);
    if (outcome === 'created' || outcome === 'reconnected') {
      const record: ConnectionRecord = {
        connectionId: change.connectionId,
        entry: ref,
        connectedAt: change.connectedAt,
      };
      await this.#client.send(
        new PutCommand({ TableName: this.#table, Item: encodeConnectionRecord(record) }),
      );
    }
    return outcome;
  }

  async #upsertEntry(change: ConnectChange, ref: ObjectRef): Promise<ConnectOutcome> {
    // A second attempt only when the entry the condition saw is gone by the classifying read
    // (the sweeper deleted it in between): the connect then creates it afresh.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const { Attributes } = await this.#client.send(
          new UpdateCommand(connectUpdate(this.#table, change)),
        );
        return Attributes?.revision === undefined ? 'created' : 'reconnected';
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
        const existing = await this.#readEntry(ref);
        if (existing) return existing.autoRegistrationGroup === undefined ? 'conflict' : 'stale';
      }
    }
    throw new Error(`connect to ${ref.namespace}/${ref.name} kept racing with deletes`);
  }

  /**
   * Marks the entry disconnected when this was its only live connection; while another holds it
   * (make before break) only forgets this one. API Gateway may deliver a replaced connection's
   * `$disconnect` after the agent reconnected: it then changes nothing but `conns`.
   */
  async disconnect(change: DisconnectChange): Promise<DisconnectResult> {
    const connection = await this.getConnection(change.connectionId);
    // A connection whose connect was refused, or a repeated $disconnect: nothing to write.
    if (!connection) return { outcome: 'unknown-connection' };
    const ref = connection.entry;
    const outcome = await this.#leaveEntry(ref, change);
    await this.#client.send(
      new DeleteCommand({ TableName: this.#table, Key: connectionKey(change.connectionId) }),
    );
    return { outcome, entry: ref };
  }

  async #leaveEntry(
    ref: ObjectRef,
    change: DisconnectChange,
  ): Promise<'disconnected' | 'still-held' | 'unchanged'> {
    const sole = async () =>
      (await this.#tryUpdate(
        disconnectSoleUpdate(this.#table, ref, change.connectionId, change.at),
      ))
        ? ('disconnected' as const)
        : undefined;
    const oneOfMany = async () =>
      (await this.#tryUpdate(disconnectOneOfManyUpdate(this.#table, ref, change.connectionId)))
        ? ('still-held' as const)
        : undefined;
    // Every rotation ends with the old connection's $disconnect while the new one holds the
    // entry; trying "one of many" first there keeps that common case at one write.
    const attempts = change.replaced ? [oneOfMany, sole] : [sole, oneOfMany];
    for (let round = 0; round < DISCONNECT_ROUNDS; round++) {
      for (const attempt of attempts) {
        const outcome = await attempt();
        if (outcome) return outcome;
      }
      // Neither held: either the connection is no longer listed (the sweeper or an operator
      // deleted the entry), or another connection joined or left between the two writes.
      const entry = await this.#readEntry(ref);
      if (!entry?.connection?.connectionIds.includes(change.connectionId)) return 'unchanged';
    }
    throw new Error(
      `disconnect of ${change.connectionId} kept racing on ${ref.namespace}/${ref.name}`,
    );
  }

  async reportHealth(report: HealthReport): Promise<HealthResult> {
    const connection = await this.getConnection(report.connectionId);
    if (!connection) return { outcome: 'unknown-connection' };
    const ref = connection.entry;
    try {
      const { Attributes } = await this.#client.send(
        new UpdateCommand(healthUpdate(this.#table, ref, report)),
      );
      const status = report.healthy ? 'True' : 'False';
      const outcome = Attributes?.healthStatus === status ? 'refreshed' : 'transitioned';
      return { outcome, entry: ref, healthy: report.healthy };
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return { outcome: 'ignored', entry: ref };
    }
  }

  async getConnection(connectionId: string): Promise<ConnectionRecord | undefined> {
    // Consistent: a $disconnect or health report can follow its $connect by milliseconds.
    const { Item } = await this.#client.send(
      new GetCommand({
        TableName: this.#table,
        Key: connectionKey(connectionId),
        ConsistentRead: true,
      }),
    );
    return Item ? decodeConnectionRecord(Item) : undefined;
  }

  getEntry(ref: ObjectRef): Promise<EntryRecord | undefined> {
    return this.#readEntry(ref);
  }

  /**
   * Queries the sparse sweep index, shard by shard: disconnected entries with
   * `sweepAt <= disconnectedAtOrBefore`, connected ones with `sweepAt < connectedBefore`. It
   * reads only entries that are due, never the table. The index is eventually consistent: the
   * sweeper re-checks each record and its delete is conditional on the revision read.
   */
  async *sweepCandidates(cutoffs: SweepCutoffs, limit: number): AsyncIterable<EntryRecord> {
    let remaining = limit;
    const ranges = [
      {
        state: 'D' as const,
        condition: 'sweepAt <= :cutoff',
        cutoff: cutoffs.disconnectedAtOrBefore,
      },
      { state: 'C' as const, condition: 'sweepAt < :cutoff', cutoff: cutoffs.connectedBefore },
    ];
    for (const range of ranges) {
      for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
        const items = queryItems(
          this.#client,
          {
            TableName: this.#table,
            IndexName: SWEEP_INDEX.name,
            KeyConditionExpression: `sweepState = :state AND ${range.condition}`,
            ExpressionAttributeValues: {
              ':state': sweepState(range.state, shard),
              ':cutoff': range.cutoff,
            },
          },
          remaining,
        );
        for await (const item of items) {
          remaining -= 1;
          yield decodeEntry(item);
        }
        if (remaining <= 0) return;
      }
    }
  }

  /**
   * Deletes the entry only at the revision the sweeper read: a reconnect (or a health report)
   * that landed after the read bumped it, and the entry stays. Then forgets the connections it
   * still listed (a stale entry's lost `$disconnect` left their records behind).
   */
  async deleteSwept(record: EntryRecord): Promise<'deleted' | 'conflict'> {
    try {
      await this.#client.send(
        new DeleteCommand({
          TableName: this.#table,
          Key: entryKey(record.entry.metadata),
          ConditionExpression: 'revision = :revision',
          ExpressionAttributeValues: { ':revision': record.revision },
        }),
      );
    } catch (error) {
      if (isConditionFailed(error)) return 'conflict';
      throw error;
    }
    await this.#catalog.deleteConnectionRecords(record.connection?.connectionIds ?? []);
    return 'deleted';
  }

  applyGroup(group: WorkloadGroup) {
    return this.#catalog.applyGroup(group);
  }
  listGroups(namespace?: string): Promise<StoredGroup[]> {
    return this.#catalog.listGroups(namespace);
  }
  deleteGroup(ref: ObjectRef): Promise<boolean> {
    return this.#catalog.deleteGroup(ref);
  }
  applyEntry(entry: WorkloadEntry) {
    return this.#catalog.applyEntry(entry);
  }
  listEntries(namespace?: string): Promise<EntryRecord[]> {
    return this.#catalog.listEntries(namespace);
  }
  deleteEntry(ref: ObjectRef): Promise<boolean> {
    return this.#catalog.deleteEntry(ref);
  }

  async #readEntry(ref: ObjectRef): Promise<EntryRecord | undefined> {
    const { Item } = await this.#client.send(
      new GetCommand({ TableName: this.#table, Key: entryKey(ref), ConsistentRead: true }),
    );
    return Item ? decodeEntry(Item) : undefined;
  }

  async #tryUpdate(input: ConstructorParameters<typeof UpdateCommand>[0]): Promise<boolean> {
    try {
      await this.#client.send(new UpdateCommand(input));
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }
}
