import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DisruptionRecord } from '../domain/disruption.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { DisruptionStore, LivenessMarkStore } from '../registration/sweep-store.ts';
import type { SweepLease, SweepLeaseStore } from '../sweep/sweep-lease-store.ts';
import { isConditionFailed } from './dynamodb-client.ts';
import type { RegistryTable } from './dynamodb-table.ts';

/** The sweeper's own state: how far its liveness checks have covered time. */
const LIVENESS_MARK_KEY = { pk: 'SWEEPER', sk: 'liveness' };
/** The sweeper's fail-static record (lib/domain/disruption.ts). */
const DISRUPTION_KEY = { pk: 'SWEEPER', sk: 'disruption' };
/** Which sweeper run holds the sweep, and until when. */
const SWEEP_LEASE_KEY = { pk: 'SWEEPER', sk: 'lease' };

/** Lane 0's lease is the sweep's; heartbeat lane k's is `lease#heartbeat-<k>`, apart from it. */
function leaseKey(lane = 0): { pk: string; sk: string } {
  return lane === 0 ? SWEEP_LEASE_KEY : { pk: 'SWEEPER', sk: `lease#heartbeat-${lane}` };
}

/** The ports this adapter implements: the run's lease, the liveness mark, fail static's record. */
type SweeperStateStore = SweepLeaseStore &
  LivenessMarkStore &
  Pick<DisruptionStore, 'disruptionRecord' | 'saveDisruptionRecord' | 'releaseHold'>;

/**
 * The sweeper's items in the `SWEEPER` partition: its lease (one run at a time), its liveness
 * cursor, and fail static's record with an operator's release beside it.
 */
export class DynamoDbSweeperState implements SweeperStateStore {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  async livenessMark(): Promise<EpochMillis | undefined> {
    const item = await this.#table.get(LIVENESS_MARK_KEY);
    return typeof item?.checkedUpTo === 'number' ? item.checkedUpTo : undefined;
  }

  async setLivenessMark(at: EpochMillis): Promise<void> {
    await this.#table.client.send(
      new PutCommand({
        TableName: this.#table.name,
        Item: { ...LIVENESS_MARK_KEY, checkedUpTo: at },
      }),
    );
  }

  /**
   * One conditional put: taken when no lease exists, the last one ran out, or this holder has
   * it (the SDK retrying a put that was applied). A lost condition (a late tick, rare) reads
   * the lease to say who holds it.
   */
  async acquireSweepLease(
    holder: string,
    now: EpochMillis,
    until: EpochMillis,
    lane = 0,
  ): Promise<SweepLease> {
    try {
      await this.#table.client.send(
        new PutCommand({
          TableName: this.#table.name,
          Item: { ...leaseKey(lane), holder, until },
          ConditionExpression: 'attribute_not_exists(pk) OR #until <= :now OR holder = :holder',
          ExpressionAttributeNames: { '#until': 'until' },
          ExpressionAttributeValues: { ':now': now, ':holder': holder },
        }),
      );
      return { acquired: true };
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const item = await this.#table.get(leaseKey(lane));
      return {
        acquired: false,
        holder: String(item?.holder ?? 'unknown'),
        until: Number(item?.until ?? now),
      };
    }
  }

  /** Ends the lease (until 0: free whatever any clock says), only if this holder has it. */
  async releaseSweepLease(holder: string, lane = 0): Promise<void> {
    await this.#table.tryUpdate({
      TableName: this.#table.name,
      Key: leaseKey(lane),
      UpdateExpression: 'SET #until = :free',
      ConditionExpression: 'holder = :holder',
      ExpressionAttributeNames: { '#until': 'until' },
      ExpressionAttributeValues: { ':free': 0, ':holder': holder },
    });
  }

  async disruptionRecord(): Promise<DisruptionRecord | undefined> {
    const item = await this.#table.get(DISRUPTION_KEY);
    if (!item || typeof item.record !== 'string') return undefined;
    const record = JSON.parse(item.record) as DisruptionRecord;
    if (typeof item.releasedAt === 'number') record.releasedAt = item.releasedAt;
    return record;
  }

  /**
   * The record is one JSON string (zone names as keys stay out of DynamoDB's attribute-name
   * rules); an operator's release is an attribute beside it, so a sweeper run that read the
   * record before `registrar sweep --force` wrote does not erase the release. Only a run that
   * found the disruption over removes it.
   */
  async saveDisruptionRecord(record: DisruptionRecord): Promise<void> {
    const { releasedAt, ...rest } = record;
    const over = record.mode === 'normal' && record.disruptedZones.length === 0;
    await this.#table.client.send(
      new UpdateCommand({
        TableName: this.#table.name,
        Key: DISRUPTION_KEY,
        UpdateExpression:
          releasedAt !== undefined
            ? 'SET #record = :record, releasedAt = :releasedAt'
            : `SET #record = :record${over ? ' REMOVE releasedAt' : ''}`,
        ExpressionAttributeNames: { '#record': 'record' },
        ExpressionAttributeValues: {
          ':record': JSON.stringify(rest),
          ...(releasedAt !== undefined ? { ':releasedAt': releasedAt } : {}),
        },
      }),
    );
  }

  async releaseHold(at: EpochMillis): Promise<'released' | 'normal'> {
    const record = await this.disruptionRecord();
    if (!record || (record.mode === 'normal' && record.disruptedZones.length === 0)) {
      return 'normal';
    }
    await this.#table.client.send(
      new UpdateCommand({
        TableName: this.#table.name,
        Key: DISRUPTION_KEY,
        UpdateExpression: 'SET releasedAt = :at',
        ExpressionAttributeValues: { ':at': at },
      }),
    );
    return 'released';
  }
}
