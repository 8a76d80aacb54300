import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type RateWindow, rateWindow, shardCapacity } from '../domain/connect-rate.ts';
import type { EpochMillis } from '../domain/model.ts';
import type { ConnectRateCounter } from '../registration/connect-rate-counter.ts';
import { EXPIRES_AT_ATTRIBUTE } from './item-codec.ts';

/** Counter items outlive their window by this much, then DynamoDB's TTL removes them (free). */
const COUNTER_TTL_MS = 3_600_000;
/**
 * Shards one connect tries before it is refused. Connects pick shards at random, so when one
 * is full the others are nearly full too: a second try admits what is left near the limit, and
 * a refused connect costs at most two failed writes, however many shards there are.
 */
const TRIES_PER_CONNECT = 2;

export function connectRateKey(namespace: string, shard: number, window: RateWindow) {
  return { pk: `RATE#${namespace}#${shard}`, sk: `W#${window.start}` };
}

/**
 * The connect rate over sharded, time-bucketed counters (lib/domain/connect-rate.ts): one
 * conditional `ADD` per connect on one of the namespace's shards, which refuses once that
 * shard's share of the window is used. A refused shard is remembered by this function
 * instance until its window ends, so a namespace over its rate costs each instance at most
 * one refused write per shard and window, whatever the number of connects refused, and a
 * refused connect at most TRIES_PER_CONNECT of them.
 */
export class DynamoDbConnectRate implements ConnectRateCounter {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #random: () => number;
  /** `<namespace>#<shard>#<window start>` -> the window's end, for shards found full. */
  readonly #full = new Map<string, EpochMillis>();

  constructor(client: DynamoDBDocumentClient, tableName: string, random = Math.random) {
    this.#client = client;
    this.#table = tableName;
    this.#random = random;
  }

  async admit(namespace: string, perSecond: number, at: EpochMillis, op: string) {
    const window = rateWindow(perSecond, at);
    for (const [key, end] of this.#full) if (end <= at) this.#full.delete(key);
    // From a random shard on, so concurrent instances spread over the shards.
    const first = Math.floor(this.#random() * window.shards);
    let tries = 0;
    for (let step = 0; step < window.shards && tries < TRIES_PER_CONNECT; step++) {
      const shard = (first + step) % window.shards;
      const memo = `${namespace}#${shard}#${window.start}`;
      if (this.#full.has(memo)) continue;
      tries += 1;
      if (await this.#count(namespace, shard, window, op)) return true;
      this.#full.set(memo, window.start + window.lengthMs);
    }
    return false;
  }

  async #count(namespace: string, shard: number, window: RateWindow, op: string) {
    const Key = connectRateKey(namespace, shard, window);
    try {
      await this.#client.send(
        new UpdateCommand({
          TableName: this.#table,
          Key,
          UpdateExpression: 'ADD #n :one SET #expires = :expires, lastOp = :op',
          // The budget, and not our own write again: an SDK retry of an ADD whose response was
          // lost finds its op as the last one and changes nothing.
          ConditionExpression:
            '(attribute_not_exists(#n) OR #n < :cap) AND (attribute_not_exists(lastOp) OR lastOp <> :op)',
          ExpressionAttributeNames: { '#n': 'connects', '#expires': EXPIRES_AT_ATTRIBUTE },
          ExpressionAttributeValues: {
            ':one': 1,
            ':cap': shardCapacity(window, shard),
            ':op': op,
            ':expires': Math.ceil((window.start + window.lengthMs + COUNTER_TTL_MS) / 1000),
          },
        }),
      );
      return true;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // Refused: the shard is full, unless the SDK sent the write again and the refusal is of
      // our own first attempt, applied with its answer lost. Only then one read tells.
      if ((error.$metadata.attempts ?? 1) <= 1) return false;
      return (await this.#read(Key))?.lastOp === op;
    }
  }

  async #read(Key: Record<string, string>) {
    const { Item } = await this.#client.send(
      new GetCommand({ TableName: this.#table, Key, ConsistentRead: true }),
    );
    return Item;
  }
}
