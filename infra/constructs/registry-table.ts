import { RemovalPolicy } from 'aws-cdk-lib';
import {
  type Attribute,
  AttributeType,
  BillingMode,
  ProjectionType,
  StreamViewType,
  Table,
} from 'aws-cdk-lib/aws-dynamodb';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { EXPIRES_AT_ATTRIBUTE } from '../../lib/store/item-codec.ts';
import { INSTANCE_INDEX, REGISTRY_TABLE, SWEEP_INDEX } from '../../lib/store/table-definition.ts';
import { partitionStatements, type TableAccess } from './table-access.ts';

/**
 * The registry table, built from the one table definition the local runtime also creates
 * (`lib/store/table-definition.ts`), so keys and the sweep index cannot drift between
 * `npm start` and AWS.
 */
export class RegistryTable extends Construct {
  readonly table: Table;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.table = new Table(this, 'Table', {
      partitionKey: attribute(REGISTRY_TABLE.partitionKey),
      sortKey: attribute(REGISTRY_TABLE.sortKey),
      // Traffic follows VM connects and sweeps: spiky and usually small.
      billingMode: BillingMode.PAY_PER_REQUEST,
      // Keys only: the Kubernetes projector re-reads what changed (level-triggered). Always on,
      // so enabling the projector later never touches the table; unread streams cost nothing.
      stream: StreamViewType.KEYS_ONLY,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // IAM-mode connection records carry `expiresAt` (epoch seconds, a day after the connect):
      // records of refused connects and of lost `$disconnect`s expire instead of piling up.
      // Nothing else carries it: a token's expiry is `validUntil` (expired and revoked tokens
      // stay in `registrar token list`). Tokens written before kept it in `expiresAt`, in
      // milliseconds, which TTL reads as tens of thousands of years away. TTL deletes reach
      // the stream as CONN# keys, which the projector's NS# filter drops.
      timeToLiveAttribute: EXPIRES_AT_ATTRIBUTE,
      // The registry (groups, tokens, IAM policies, entries the mesh routes to) is the state
      // of the system: neither `cdk destroy` nor a replaced resource may delete it. No fixed
      // name (adding one would replace deployed tables): test/infra/registry-table-guard.test.ts
      // fails any change to this construct's logical ID or a replacement-forcing property.
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of REGISTRY_TABLE.globalSecondaryIndexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.indexName,
        partitionKey: attribute(index.partitionKey),
        sortKey: attribute(index.sortKey),
        projectionType: ProjectionType[index.projection],
        // `sk` is the table's sort key: already an attribute, not redefined.
      });
    }
  }

  /**
   * Exactly the item actions a function calls, each on the partitions it touches: a
   * `dynamodb:LeadingKeys` condition per statement (GetItem, PutItem, UpdateItem and DeleteItem
   * always name one partition key, so `ForAllValues` is never vacuously true for them). No
   * Scan, no batch or transact actions: no function calls them, and a Scan carries no leading
   * key a condition could check.
   *
   * Query on the sweep index is granted on the index ARN alone, without LeadingKeys: AWS
   * documents the key as the table's partition key, not an index's, so a condition there
   * would either deny every index query or mean nothing. The sparse index holds only
   * auto-registered entries, which the sweeper may read anyway.
   */
  grantAccess(grantee: IGrantable, access: TableAccess): void {
    const principal = grantee.grantPrincipal;
    for (const statement of partitionStatements(this.table.tableArn, access.items)) {
      principal.addToPrincipalPolicy(statement);
    }
    if (access.querySweepIndex) {
      principal.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['dynamodb:Query'],
          resources: [`${this.table.tableArn}/index/${SWEEP_INDEX.name}`],
        }),
      );
    }
    if (access.queryInstanceIndex) {
      // Keys only: the instance id -> entry keys, nothing of the entries themselves.
      principal.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['dynamodb:Query'],
          resources: [`${this.table.tableArn}/index/${INSTANCE_INDEX.name}`],
        }),
      );
    }
  }
}

function attribute(name: string): Attribute {
  const definition = REGISTRY_TABLE.attributes.find((a) => a.name === name);
  if (!definition) throw new Error(`table definition has no attribute '${name}'`);
  return { name, type: definition.type === 'N' ? AttributeType.NUMBER : AttributeType.STRING };
}
