import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { LanePlanRecord } from '../domain/heartbeat-lanes.ts';
import type {
  HeartbeatCursors,
  HeartbeatLaneState,
  HeartbeatLaneStore,
} from '../registration/heartbeat-store.ts';
import { queryItems } from './dynamodb-client.ts';
import type { RegistryTable } from './dynamodb-table.ts';

/** How the heartbeat groups' entries are shared among the lanes; only lane 0 writes it. */
const PLAN_KEY = { pk: 'SWEEPER', sk: 'heartbeat-plan' };
/**
 * Each lane's own item. Lane 0 keeps the key the single heartbeat lane used (its `cursors`
 * attribute as before, so a release from before lanes, rolled back to, resumes from it).
 */
const LANE_PREFIX = 'heartbeat-cursor';

function laneKey(lane: number): { pk: string; sk: string } {
  return { pk: 'SWEEPER', sk: lane === 0 ? LANE_PREFIX : `${LANE_PREFIX}#${lane}` };
}

/**
 * The heartbeat lanes' items in the `SWEEPER` partition: the plan, and one item per lane (its
 * cursors, its samples). One item per lane keeps each small (a lane's samples are its share's:
 * ~40 bytes a SAMPLE_EVERY entries) and lets no lane's write race another's. JSON strings,
 * so namespace and group names stay out of DynamoDB's attribute-name rules.
 */
export class DynamoDbHeartbeatLanes implements HeartbeatLaneStore {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  async heartbeatLane(lane: number): Promise<HeartbeatLaneState | undefined> {
    return decodeLane(await this.#table.get(laneKey(lane)));
  }

  /** A put of the lane's own item: only that lane's invocation (under its lease) writes it. */
  async saveHeartbeatLane(lane: number, state: HeartbeatLaneState): Promise<void> {
    const { cursors, ...rest } = state;
    await this.#table.client.send(
      new PutCommand({
        TableName: this.#table.name,
        Item: { ...laneKey(lane), cursors: JSON.stringify(cursors), lane: JSON.stringify(rest) },
      }),
    );
  }

  async heartbeatLanes(): Promise<Map<number, HeartbeatLaneState>> {
    const lanes = new Map<number, HeartbeatLaneState>();
    const items = queryItems(this.#table.client, {
      TableName: this.#table.name,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': 'SWEEPER', ':prefix': LANE_PREFIX },
    });
    for await (const item of items) {
      const sk = String(item.sk);
      const lane = sk === LANE_PREFIX ? 0 : Number(sk.slice(LANE_PREFIX.length + 1));
      const state = decodeLane(item);
      if (Number.isInteger(lane) && state) lanes.set(lane, state);
    }
    return lanes;
  }

  async heartbeatPlan(): Promise<LanePlanRecord | undefined> {
    const item = await this.#table.get(PLAN_KEY);
    return typeof item?.plan === 'string' ? (JSON.parse(item.plan) as LanePlanRecord) : undefined;
  }

  async saveHeartbeatPlan(record: LanePlanRecord): Promise<void> {
    await this.#table.client.send(
      new PutCommand({
        TableName: this.#table.name,
        Item: { ...PLAN_KEY, plan: JSON.stringify(record) },
      }),
    );
  }
}

/** An item written before lanes (only `cursors`) is plan 0's, with no samples yet. */
function decodeLane(item: Record<string, unknown> | undefined): HeartbeatLaneState | undefined {
  if (!item || typeof item.cursors !== 'string') return undefined;
  const cursors = JSON.parse(item.cursors) as HeartbeatCursors;
  const rest =
    typeof item.lane === 'string'
      ? (JSON.parse(item.lane) as Omit<HeartbeatLaneState, 'cursors'>)
      : { planVersion: 0, complete: false, samples: {} };
  return { ...rest, cursors };
}
