/**
 * The registry table, defined once: the local runtime creates it from this (CreateTable on
 * dynalite or DynamoDB Local) and the CDK table construct builds the same schema from it.
 *
 * Items (pk / sk):
 *   NS#<namespace>  / WG#<name>        a WorkloadGroup
 *   NS#<namespace>  / WE#<name>        a WorkloadEntry (hand-made or auto-registered)
 *   CONN#<id>       / CONN             a live connection -> the entry it registered
 *   ADDR#<net>#<ip> / ADDR             the entry that holds an address within its network
 *   TOKEN           / <id>             a join token (hashed secret)
 *   POLICY          / <roleArn>#<ns>   an IAM-mode allow rule
 *   TERMINATED#<id> / TERMINATED       an instance EC2 reported terminated (TTL: a day)
 *   NAMESPACES      / <namespace>      a namespace that holds groups or entries (the full
 *                                      listing's Query; `#complete` once none is missing)
 *   NSCONFIG        / <namespace>      what the operator allows a namespace (quotas, networks,
 *                                      address ranges; lib/store/dynamodb-namespace-settings.ts)
 *   RATE#<ns>#<shard> / W#<start>      connects of a namespace in one window (expires by TTL)
 *   ROLLOUT         / <ns>/<group>     a group's template rollout (progress, pause, removal)
 *
 * The sweep index is sparse: only auto-registered entries carry `sweepState` and `sweepAt`.
 *   sweepState = "C#<shard>" with sweepAt = newest connectedAt    (stale after 1.5 x max age)
 *   sweepState = "L#<namespace>#<shard>" (left cleanly) or "D#<namespace>#<shard>" (left
 *     abnormally) with sweepAt = disconnectedAt                  (due after the grace period)
 *   Release 0.1.0 wrote departures to "L#<shard>" / "D#<shard>": still read, no longer written.
 * Keying by the raw time (not "time due") keeps the index right when the grace period or the
 * maximum connection age is reconfigured. Shards spread index writes over partitions.
 */
export const TABLE_KEYS = { partitionKey: 'pk', sortKey: 'sk' } as const;

/**
 * The partitions, as IAM `dynamodb:LeadingKeys` patterns: the stack grants each function only
 * the partitions it touches. A test checks the item codec's keys against these.
 */
export const PARTITIONS = {
  /** Groups and entries of one namespace. */
  namespaces: 'NS#*',
  /**
   * The namespaces that hold groups or entries (lib/store/dynamodb-namespace-index.ts): the
   * full reconcile and `get -A` list them with one Query instead of a Scan.
   */
  namespaceIndex: 'NAMESPACES',
  /** Connection records. */
  connections: 'CONN#*',
  /**
   * Address claims: which entry holds an address within its network (an address is unique
   * within a network, across groups and namespaces; lib/store/dynamodb-address-claims.ts).
   */
  addresses: 'ADDR#*',
  tokens: 'TOKEN',
  policies: 'POLICY',
  /**
   * Instances EC2 reported terminated (lib/store/dynamodb-terminated-instances.ts): IAM mode
   * refuses their credentials and documents for a day.
   */
  terminated: 'TERMINATED#*',
  /** The sweeper's own state (how far its liveness checks have covered). */
  sweeper: 'SWEEPER',
  /** The effective registrar configuration every client reads (the sweep policy, group source). */
  config: 'CONFIG',
  /**
   * Template rollouts (lib/store/dynamodb-rollout-records.ts): `ROLLOUT / <namespace>/<name>`
   * per group, and the runs' lease `ROLLOUT / #lease`.
   */
  rollouts: 'ROLLOUT',
  /**
   * Cell counters (fail static; architecture.md): `ZONE#<shard>` / `<namespace>#<zone>`.
   */
  zones: 'ZONE*',
  /** Namespace settings, one item per namespace the operator configured. */
  namespaceSettings: 'NSCONFIG',
  /** Connect-rate counters: `RATE#<namespace>#<shard>` / `W#<window start>`. */
  connectRate: 'RATE#*',
  /**
   * How many times a group's heartbeat annotations changed (`HBCHANGES / count`): `apply` and
   * the group sync count each, the sweeper reads it before each pass
   * (lib/store/dynamodb-heartbeat-groups.ts). A partition of its own: the group sync may
   * count without any right to the sweeper's state.
   */
  heartbeatChanges: 'HBCHANGES',
} as const;

/**
 * Counter partitions. A last disconnect writes one counter item; with 100,000 VMs leaving
 * within a minute (~1,700 writes/s) the items are spread over 32 partition keys. Each cell
 * (a namespace's entries in one zone) has an item in up to CELL_SPREAD of them, chosen by a
 * hash of the entry's name from a start chosen by a hash of the namespace: 20,000 VMs of one
 * namespace leaving within a minute write ~42/s to each of its 8 items, and the reads grow
 * with the cells (at most 8 items each), never with the entries. An entry always counts in
 * the same item.
 */
export const ZONE_SHARDS = 32;
export const CELL_SPREAD = 8;

/**
 * Where counters lived before they were per namespace (`ZONE` / `<zone>` and `ZONE#<shard>` /
 * `<zone>`): no longer read (a zone-wide count cannot say whose VMs went away); see
 * docs/operations.md on upgrading.
 */
export const UNSHARDED_ZONE_PARTITION = 'ZONE';

export function zonePartition(shard: number): string {
  return `ZONE#${shard}`;
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** The counter partition of an entry: its namespace's first shard, plus its name's spread. */
export function zoneShardOf(ref: { namespace?: string; name?: string } | undefined): number {
  const first = fnv1a(ref?.namespace ?? '');
  return (first + (fnv1a(ref?.name ?? '') % CELL_SPREAD)) % ZONE_SHARDS;
}

/**
 * The counter partitions that hold a namespace's cells: its first shard and the next
 * CELL_SPREAD - 1 (zoneShardOf never leaves them), so its live count is read from these alone.
 */
export function namespaceZoneShards(namespace: string): number[] {
  const first = fnv1a(namespace);
  return Array.from({ length: CELL_SPREAD }, (_, spread) => (first + spread) % ZONE_SHARDS);
}

export const SWEEP_INDEX = {
  name: 'sweep',
  partitionKey: 'sweepState',
  sortKey: 'sweepAt',
} as const;

/**
 * EC2 instance id -> its entries (sparse: only entries whose newest connect named a trusted
 * instance id). The EC2 state-change function reads keys only.
 */
export const INSTANCE_INDEX = {
  name: 'instance',
  partitionKey: 'instanceId',
  sortKey: 'sk',
} as const;

/** Index partitions per state; the sweeper queries each. */
export const SWEEP_SHARDS = 4;

export interface TableDefinition {
  attributes: { name: string; type: 'S' | 'N' }[];
  partitionKey: string;
  sortKey: string;
  globalSecondaryIndexes: {
    indexName: string;
    partitionKey: string;
    sortKey: string;
    projection: 'ALL' | 'KEYS_ONLY';
  }[];
}

export const REGISTRY_TABLE: TableDefinition = {
  attributes: [
    { name: TABLE_KEYS.partitionKey, type: 'S' },
    { name: TABLE_KEYS.sortKey, type: 'S' },
    { name: SWEEP_INDEX.partitionKey, type: 'S' },
    { name: SWEEP_INDEX.sortKey, type: 'N' },
    { name: INSTANCE_INDEX.partitionKey, type: 'S' },
  ],
  partitionKey: TABLE_KEYS.partitionKey,
  sortKey: TABLE_KEYS.sortKey,
  globalSecondaryIndexes: [
    {
      indexName: SWEEP_INDEX.name,
      partitionKey: SWEEP_INDEX.partitionKey,
      sortKey: SWEEP_INDEX.sortKey,
      // The sweeper needs the whole entry to decide and to make its delete conditional on the
      // revision it read: projecting ALL saves one GetItem per candidate.
      projection: 'ALL',
    },
    {
      indexName: INSTANCE_INDEX.name,
      partitionKey: INSTANCE_INDEX.partitionKey,
      sortKey: INSTANCE_INDEX.sortKey,
      // The function re-reads nothing: it deletes by key, conditional on the instance id.
      projection: 'KEYS_ONLY',
    },
  ],
};

/** The CreateTable input for the local runtime and tests (on-demand, like the CDK table). */
export function createTableInput(tableName: string) {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: REGISTRY_TABLE.attributes.map((a) => ({
      AttributeName: a.name,
      AttributeType: a.type,
    })),
    KeySchema: [
      { AttributeName: REGISTRY_TABLE.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: REGISTRY_TABLE.sortKey, KeyType: 'RANGE' as const },
    ],
    GlobalSecondaryIndexes: REGISTRY_TABLE.globalSecondaryIndexes.map((index) => ({
      IndexName: index.indexName,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: 'HASH' as const },
        { AttributeName: index.sortKey, KeyType: 'RANGE' as const },
      ],
      Projection: { ProjectionType: index.projection },
    })),
  };
}
