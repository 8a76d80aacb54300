import { RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import {
  type Attribute,
  AttributeType,
  BillingMode,
  type CfnTable,
  ProjectionType,
  StreamViewType,
  Table,
} from 'aws-cdk-lib/aws-dynamodb';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct, type IConstruct } from 'constructs';
import { REGISTRY_TABLE } from '../../lib/store/table-definition.ts';

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
      // The registry (groups, tokens, IAM policies, entries the mesh routes to) is the state
      // of the system: neither `cdk destroy` nor a replaced resource may delete it.
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of REGISTRY_TABLE.globalSecondaryIndexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.indexName,
        partitionKey: attribute(index.partitionKey),
        sortKey: attribute(index.sortKey),
        projectionType: ProjectionType[index.projection],
      });
    }
  }

  /** Read-write item access: conditional writes, deletes, and queries on the sweep index. */
  grantReadWriteData(grantee: IGrantable): void {
    this.table.grantReadWriteData(grantee);
    this.acknowledgeIndexWildcard(grantee);
  }

  /** Read-only item access. */
  grantReadData(grantee: IGrantable): void {
    this.table.grantReadData(grantee);
    this.acknowledgeIndexWildcard(grantee);
  }

  /**
   * DynamoDB's grants name the table and `<table ARN>/index/*`: the wildcard covers this
   * table's own indexes (today only the sweep index), never another table.
   */
  private acknowledgeIndexWildcard(grantee: IGrantable): void {
    // The finding is on the policy of the grantee's role, so the acknowledgement goes there.
    const principal = grantee.grantPrincipal;
    const target: IConstruct = Construct.isConstruct(principal) ? principal : this;
    const logicalId = Stack.of(this).getLogicalId(this.table.node.defaultChild as CfnTable);
    Validations.of(target).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${logicalId}.Arn>/index/*]`,
      reason:
        "The grant is scoped to this table's own secondary indexes (<table ARN>/index/*), added by Table.grant*; it names no other table.",
    });
  }
}

function attribute(name: string): Attribute {
  const definition = REGISTRY_TABLE.attributes.find((a) => a.name === name);
  if (!definition) throw new Error(`table definition has no attribute '${name}'`);
  return { name, type: definition.type === 'N' ? AttributeType.NUMBER : AttributeType.STRING };
}
