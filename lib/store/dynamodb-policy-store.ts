import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
} from '@aws-sdk/lib-dynamodb';
import type { IamPolicy, PolicyStore } from '../auth/policy-store.ts';
import { isConditionFailed, readPartition } from './dynamodb-client.ts';

/** The partition of the IAM-mode allow rules (`POLICY` / `<roleArn>#<namespace>`). */
export const POLICY_PARTITION = 'POLICY';

export function policyKey(roleArn: string, namespace: string): { pk: string; sk: string } {
  // A role ARN contains ':' and '/' but never '#', so the sort key splits unambiguously.
  return { pk: POLICY_PARTITION, sk: `${roleArn}#${namespace}` };
}

/** IAM-mode allow rules under one partition: few, read by key on connect, listed by the CLI. */
export class DynamoDbPolicyStore implements PolicyStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  async putPolicy(policy: IamPolicy): Promise<void> {
    await this.#client.send(
      new PutCommand({
        TableName: this.#table,
        Item: { ...policyKey(policy.roleArn, policy.namespace), ...policy },
      }),
    );
  }

  async getPolicy(roleArn: string, namespace: string): Promise<IamPolicy | undefined> {
    // Consistent: a revoked rule must refuse the very next connect.
    const { Item } = await this.#client.send(
      new GetCommand({
        TableName: this.#table,
        Key: policyKey(roleArn, namespace),
        ConsistentRead: true,
      }),
    );
    return Item ? decodePolicy(Item) : undefined;
  }

  listPolicies(): Promise<IamPolicy[]> {
    return readPartition(this.#client, this.#table, POLICY_PARTITION, decodePolicy);
  }

  async deletePolicy(roleArn: string, namespace: string): Promise<boolean> {
    try {
      await this.#client.send(
        new DeleteCommand({
          TableName: this.#table,
          Key: policyKey(roleArn, namespace),
          ConditionExpression: 'attribute_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }
}

function decodePolicy(item: Record<string, unknown>): IamPolicy {
  const policy: IamPolicy = {
    roleArn: String(item.roleArn),
    namespace: String(item.namespace),
    createdAt: Number(item.createdAt),
  };
  if (typeof item.serviceAccount === 'string') policy.serviceAccount = item.serviceAccount;
  if (item.networks !== undefined) policy.networks = networkList(item.networks);
  return policy;
}

/** A restriction of the wrong type (edited by hand) fails closed: it allows no network. */
function networkList(value: unknown): string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string') ? value : [];
}
