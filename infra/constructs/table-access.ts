import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { PARTITIONS } from '../../lib/store/table-definition.ts';

/** The DynamoDB item actions the functions call (each is one SDK command in lib/store). */
export type ItemAction = 'GetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'Query';

/** Item actions on the partitions they may touch (`dynamodb:LeadingKeys`). */
export interface PartitionAccess {
  actions: readonly ItemAction[];
  partitions: readonly string[];
}

/** What one function may do to the registry table. */
export interface TableAccess {
  items: readonly PartitionAccess[];
  /** Query on the sparse sweep index (only auto-registered entries are in it). */
  querySweepIndex?: boolean;
  /** Query on the instance index (keys only: instance id -> entries). */
  queryInstanceIndex?: boolean;
}

export type AccessingFunction =
  | 'authorize'
  | 'connect'
  | 'disconnect'
  | 'message'
  | 'sweeper'
  | 'ec2StateChange'
  | 'projector'
  | 'rollout';

/** The zone counters (fail static): moved by every write that connects or removes an entry. */
const ZONE_COUNTERS = { actions: ['UpdateItem'], partitions: [PARTITIONS.zones] } as const;

/**
 * Each function's access, read off the store calls it makes (lib/store/*.ts), so a new call
 * without a grant fails loudly in the integration tests against AWS rather than quietly
 * widening a role:
 * - authorize: reads the presented token.
 * - connect: reads the group and the entry, writes the entry conditionally (and deletes one
 *   it created when the connect is withdrawn, or one its address claim replaces); claims the
 *   entry's address (one conditional put, read when held); reads its namespace's settings
 *   and live count (a Query of its zone counters), and counts itself against the connect
 *   rate (one conditional update, read when refused); in IAM mode also reads the caller's
 *   allow rule and whether EC2 reported its instance terminated, and records the
 *   connection (no authorizer carries its entry).
 * - disconnect: reads and updates the entry; reads and forgets the connection record.
 * - message: reads and updates the entry (health); reads the connection record.
 * - sweeper: queries the sweep index and the namespace index (whose namespaces' departures it
 *   reads), reads/updates/deletes entries, forgets connection records, keeps its liveness
 *   mark and writes the effective sweep policy; reads the count of heartbeat changes
 *   (HBCHANGES) and the namespaces' heartbeat quotas (NSCONFIG); keeps the table's schema record (CONFIG) and
 *   runs the migrations (lib/store/dynamodb-migrations.ts): the zone-wide counters of before
 *   deleted (ZONE*: Query, DeleteItem). Never the TOKEN partition: only the authorizer reads
 *   tokens.
 * - connect, disconnect, sweeper and ec2StateChange move the zone counters; the sweeper also
 *   reads them (one Query of the ZONE partition) and keeps its fail-static record.
 * - ec2StateChange: queries the instance index, deletes the entries it names; in IAM mode
 *   records a terminated instance (refused by connect for a day).
 * - connect, sweeper and ec2StateChange keep a deleted entry's events: one PutItem of a history
 *   item (`NS#<namespace>` / `EV#<name>#<time>`, in the entry's own partition).
 * - projector: reads entries (GetItem), lists a namespace's entries and groups (Query), the
 *   namespace index (Query) and the namespaces' settings (Query: their address ranges);
 *   nothing else: no token, allow rule, connection record or counter.
 *   With groups from the cluster, the projector construct adds the group sync's: writes of
 *   group items only (by attribute) and the namespace index, and asking the rollout function
 *   for removals (ROLLOUT: Query, UpdateItem).
 * - rollout: lists the groups (the namespace index and a Query per namespace), reads and
 *   updates entries (one conditional UpdateItem each), keeps its records and lease (ROLLOUT),
 *   records where groups come from (CONFIG); for a group deleted in the cluster, deletes the
 *   group and its entries and their connection records, as `delete wg` does.
 */
export function tableAccess(name: AccessingFunction, authMode: 'token' | 'iam'): TableAccess {
  const iam = authMode === 'iam';
  switch (name) {
    case 'authorize':
      return { items: [{ actions: ['GetItem'], partitions: [PARTITIONS.tokens] }] };
    case 'connect':
      return {
        items: [
          {
            actions: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'],
            partitions: [PARTITIONS.namespaces],
          },
          { actions: ['Query', 'UpdateItem'], partitions: [PARTITIONS.zones] },
          { actions: ['GetItem', 'PutItem'], partitions: [PARTITIONS.addresses] },
          { actions: ['GetItem'], partitions: [PARTITIONS.namespaceSettings] },
          { actions: ['GetItem', 'UpdateItem'], partitions: [PARTITIONS.connectRate] },
          ...(iam
            ? [
                { actions: ['PutItem'], partitions: [PARTITIONS.connections] } as const,
                { actions: ['GetItem'], partitions: [PARTITIONS.policies] } as const,
                { actions: ['GetItem'], partitions: [PARTITIONS.terminated] } as const,
              ]
            : []),
        ],
      };
    case 'disconnect':
      return {
        items: [
          { actions: ['GetItem', 'UpdateItem'], partitions: [PARTITIONS.namespaces] },
          { actions: ['GetItem', 'DeleteItem'], partitions: [PARTITIONS.connections] },
          ZONE_COUNTERS,
        ],
      };
    case 'message':
      return {
        items: [
          { actions: ['GetItem', 'UpdateItem'], partitions: [PARTITIONS.namespaces] },
          { actions: ['GetItem'], partitions: [PARTITIONS.connections] },
        ],
      };
    case 'sweeper':
      return {
        querySweepIndex: true,
        items: [
          {
            actions: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'],
            partitions: [PARTITIONS.namespaces],
          },
          { actions: ['DeleteItem'], partitions: [PARTITIONS.connections] },
          {
            actions: ['GetItem', 'PutItem', 'UpdateItem'],
            partitions: [PARTITIONS.sweeper, PARTITIONS.config],
          },
          { actions: ['Query', 'UpdateItem', 'DeleteItem'], partitions: [PARTITIONS.zones] },
          // Lane 0 reads every heartbeat lane's item at once (lib/store/dynamodb-heartbeat-lanes.ts).
          { actions: ['Query'], partitions: [PARTITIONS.sweeper] },
          // The namespaces whose departures it reads, each from its own index keys.
          { actions: ['Query'], partitions: [PARTITIONS.namespaceIndex] },
          // Before each heartbeat pass: whether a group's heartbeat changed; once a run, the
          // heartbeat quota of each namespace with heartbeat groups.
          {
            actions: ['GetItem'],
            partitions: [PARTITIONS.heartbeatChanges, PARTITIONS.namespaceSettings],
          },
        ],
      };
    case 'ec2StateChange':
      return {
        queryInstanceIndex: true,
        items: [
          { actions: ['PutItem', 'DeleteItem'], partitions: [PARTITIONS.namespaces] },
          ZONE_COUNTERS,
          ...(iam
            ? [{ actions: ['UpdateItem'], partitions: [PARTITIONS.terminated] } as const]
            : []),
        ],
      };
    case 'projector':
      return {
        items: [
          {
            actions: ['GetItem', 'Query'],
            partitions: [PARTITIONS.namespaces, PARTITIONS.namespaceIndex],
          },
          { actions: ['Query'], partitions: [PARTITIONS.namespaceSettings] },
        ],
      };
    case 'rollout':
      return {
        items: [
          {
            // PutItem: a removed entry's history item (its events outlive it, EV#...).
            actions: ['GetItem', 'Query', 'UpdateItem', 'DeleteItem', 'PutItem'],
            partitions: [PARTITIONS.namespaces],
          },
          { actions: ['Query'], partitions: [PARTITIONS.namespaceIndex] },
          {
            actions: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'Query'],
            partitions: [PARTITIONS.rollouts],
          },
          { actions: ['GetItem', 'PutItem'], partitions: [PARTITIONS.config] },
          { actions: ['DeleteItem'], partitions: [PARTITIONS.connections] },
        ],
      };
  }
}

/**
 * One statement per partition access, each conditioned on `dynamodb:LeadingKeys` (the
 * partition key of the items a request reads or writes). GetItem, PutItem, UpdateItem,
 * DeleteItem and Query always name one partition key, so `ForAllValues` is never vacuously
 * true for them; a Scan names none (`ForAllValues` is true for an absent key), which is why no
 * statement here ever lists Scan.
 */
export function partitionStatements(
  tableArn: string,
  items: readonly PartitionAccess[],
): PolicyStatement[] {
  return items.map(
    ({ actions, partitions }) =>
      new PolicyStatement({
        actions: actions.map((action) => `dynamodb:${action}`),
        resources: [tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...partitions] } },
      }),
  );
}
