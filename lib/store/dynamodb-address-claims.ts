import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { EpochMillis, ObjectRef } from '../domain/model.ts';
import type {
  AddressClaim,
  AddressClaimItemStore,
  ClaimResult,
} from '../registration/entry-lifecycle-store.ts';
import { isConditionFailed } from './dynamodb-client.ts';
import { EXPIRES_AT_ATTRIBUTE } from './item-codec.ts';

/** The partition of an address's claim: one item per address and network, never a hot key. */
export function addressKey(claim: Pick<AddressClaim, 'address' | 'network'>) {
  return { pk: `ADDR#${claim.network}#${claim.address}`, sk: 'ADDR' };
}

/**
 * A claim outlives its entry's connections by this much: every connect renews it, and an
 * entry is reconnected at least every maximum connection age (2 h) while it lives, so a claim
 * whose entry was deleted (swept, deleted by hand) stops counting within a day and the
 * table's TTL removes it. A claim naming an entry that no longer exists is taken over at once
 * anyway (see claimAddress in lib/registration/address-claim.ts).
 */
export const ADDRESS_CLAIM_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Address claims (DESIGN: an address is unique within a network). One item per address and
 * network naming the entry that holds it, written by every connect with one conditional put:
 * taken when free, expired, or already this entry's. Losing is an outcome: the holder is read
 * and returned for the use case to decide.
 */
export class DynamoDbAddressClaims implements AddressClaimItemStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  async claimAddress(claim: AddressClaim): Promise<ClaimResult> {
    for (let round = 0; round < 3; round++) {
      const taken = await this.#put(
        claim,
        'attribute_not_exists(pk) OR (entryNamespace = :ns AND entryName = :name) OR #expires < :now',
        { ':ns': claim.entry.namespace, ':name': claim.entry.name },
      );
      if (taken) return { outcome: 'claimed' };
      const { Item } = await this.#client.send(
        new GetCommand({ TableName: this.#table, Key: addressKey(claim), ConsistentRead: true }),
      );
      // Released between the put and the read (its TTL, or a take-over): try again.
      if (!Item) continue;
      return {
        outcome: 'held',
        holder: { namespace: String(Item.entryNamespace), name: String(Item.entryName) },
        ...(typeof Item.instanceId === 'string' ? { instanceId: Item.instanceId } : {}),
      };
    }
    throw new Error(`the claim of address ${claim.address} kept changing; retry the connect`);
  }

  /**
   * Takes the claim from `from` for this entry: conditional on the claim still naming `from`,
   * so two claimants replacing one stale holder cannot both win.
   */
  async takeAddress(claim: AddressClaim, from: ObjectRef): Promise<boolean> {
    return this.#put(claim, 'entryNamespace = :fromNs AND entryName = :fromName', {
      ':fromNs': from.namespace,
      ':fromName': from.name,
    });
  }

  async #put(claim: AddressClaim, condition: string, values: Record<string, string>) {
    const usesNow = condition.includes(':now');
    try {
      await this.#client.send(
        new PutCommand({
          TableName: this.#table,
          Item: {
            ...addressKey(claim),
            entryNamespace: claim.entry.namespace,
            entryName: claim.entry.name,
            claimedAt: claim.at,
            ...(claim.instanceId !== undefined ? { instanceId: claim.instanceId } : {}),
            [EXPIRES_AT_ATTRIBUTE]: epochSeconds(claim.at + ADDRESS_CLAIM_TTL_MS),
          },
          ConditionExpression: condition,
          ...(usesNow ? { ExpressionAttributeNames: { '#expires': EXPIRES_AT_ATTRIBUTE } } : {}),
          ExpressionAttributeValues: {
            ...values,
            ...(usesNow ? { ':now': epochSeconds(claim.at) } : {}),
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }
}

function epochSeconds(at: EpochMillis): number {
  return Math.ceil(at / 1000);
}
