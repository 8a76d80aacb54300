import { type DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { EpochMillis } from '../domain/model.ts';
import type { SweepRun, SweepRunStore } from '../sweep/sweep-run-store.ts';
import { isConditionFailed, queryItems } from './dynamodb-client.ts';
import { PARTITIONS } from './table-definition.ts';

/**
 * The sweeper's recent runs, for `registrar dashboard`'s chart: what each run checked, deleted,
 * held and whether it stopped at its deadline. The registry keeps nothing else about past runs
 * (the metrics are in CloudWatch, which a local runtime has not).
 *
 * Bounded without TTL (dynalite has none): a ring of RUN_SLOTS items, `SWEEPER / run#<slot>`,
 * the slot being the run's sweep interval counted since the epoch, modulo RUN_SLOTS. Each run
 * overwrites the item of RUN_SLOTS intervals before it (120 x 1 min = the last 2 hours), so the
 * table never holds more than RUN_SLOTS of them, and a reader drops a slot older than the ring
 * (a gap in the runs leaves old items behind). Two runs within one interval (a tick skipped and
 * caught up, a manual `sweepNow` of the local runtime) share a slot: their counts add up.
 *
 * Cost: one PutItem of ~300 bytes per run (1 WRU; 43,200 a month at one run a minute), and a
 * reader's Query of at most RUN_SLOTS small items (~36 KB: 5 RRU eventually consistent).
 */
export const RUN_SLOTS = 120;

const RUN_PREFIX = 'run#';

const COUNTS = [
  'deleted',
  'conflicts',
  'candidatesRead',
  'livenessChecked',
  'livenessUnknown',
  'phantomsDropped',
  'failed',
  'held',
  'slowed',
] as const satisfies readonly (keyof SweepRun)[];

export class DynamoDbSweepRuns implements SweepRunStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #slotMs: number;

  /** `slotMs`: the sweep interval, so consecutive runs land in consecutive slots. */
  constructor(client: DynamoDBDocumentClient, tableName: string, slotMs = 60_000) {
    if (!Number.isFinite(slotMs) || slotMs <= 0) {
      throw new RangeError(`slotMs must be a positive number of milliseconds, got ${slotMs}`);
    }
    this.#client = client;
    this.#table = tableName;
    this.#slotMs = slotMs;
  }

  async record(run: SweepRun): Promise<void> {
    const interval = Math.floor(run.at / this.#slotMs);
    const slot = interval % RUN_SLOTS;
    const Key = { pk: PARTITIONS.sweeper, sk: `${RUN_PREFIX}${String(slot).padStart(3, '0')}` };
    // A second run within the same interval (a tick caught up after a long run, a manual
    // sweep) adds its counts to the first's: overwriting it lost the first run's deletions
    // from the chart (CI: "0 deleted" beside a VM the sweeper had just deleted).
    const names: Record<string, string> = {
      '#interval': 'interval',
      '#at': 'at',
      '#mode': 'mode',
      '#stopped': 'stoppedEarly',
    };
    const values: Record<string, unknown> = {
      ':interval': interval,
      ':at': run.at,
      ':mode': run.mode,
      ':stopped': run.stoppedEarly,
    };
    const adds = COUNTS.map((field, i) => {
      names[`#c${i}`] = field;
      values[`:c${i}`] = run[field];
      return `#c${i} :c${i}`;
    });
    try {
      await this.#client.send(
        new UpdateCommand({
          TableName: this.#table,
          Key,
          ConditionExpression: '#interval = :interval',
          UpdateExpression: `SET #at = :at, #mode = :mode, #stopped = :stopped ADD ${adds.join(', ')}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
      return;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
    // The first run of its interval: it takes the slot from the run RUN_SLOTS intervals before.
    const item: Record<string, unknown> = {
      ...Key,
      interval,
      at: run.at,
      mode: run.mode,
      stoppedEarly: run.stoppedEarly,
    };
    for (const field of COUNTS) item[field] = run[field];
    await this.#client.send(new PutCommand({ TableName: this.#table, Item: item }));
  }

  async recent(since: EpochMillis): Promise<SweepRun[]> {
    const runs: SweepRun[] = [];
    const items = queryItems(this.#client, {
      TableName: this.#table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': PARTITIONS.sweeper, ':prefix': RUN_PREFIX },
    });
    for await (const item of items) {
      const run = decodeRun(item);
      if (run && run.at >= since) runs.push(run);
    }
    return runs.sort((a, b) => a.at - b.at);
  }
}

/** An item written by another version, or damaged: skipped, never shown half-read. */
function decodeRun(item: Record<string, unknown>): SweepRun | undefined {
  if (typeof item.at !== 'number' || typeof item.mode !== 'string') return undefined;
  const run: Record<string, unknown> = {
    at: item.at,
    mode: item.mode,
    stoppedEarly: item.stoppedEarly === true,
  };
  for (const field of COUNTS) run[field] = typeof item[field] === 'number' ? item[field] : 0;
  return run as unknown as SweepRun;
}
