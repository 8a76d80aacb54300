import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  PutItemCommand,
  ResourceInUseException,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { NAMESPACE_INDEX_COMPLETE, namespaceIndexKey } from './dynamodb-namespace-index.ts';
import { createTableInput } from './table-definition.ts';

const POLL_MS = 50;
const TIMEOUT_MS = 60_000;

/**
 * Creates the registry table when it is missing and waits until it is ACTIVE. Used by the local
 * runtime and tests only: on AWS the CDK stack owns the table.
 *
 * A table this call creates starts with its namespace index marked complete (it holds no
 * namespace yet); an existing one is left as it is (see DynamoDbNamespaceIndex.backfill).
 */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  let created = false;
  if ((await tableStatus(client, tableName)) === undefined) {
    try {
      await client.send(new CreateTableCommand(createTableInput(tableName)));
      created = true;
    } catch (error) {
      // Two processes starting at once (the local runtime and a CLI) may both try to create it.
      if (!(error instanceof ResourceInUseException)) throw error;
    }
  }
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const status = await tableStatus(client, tableName);
    if (status === 'ACTIVE') {
      if (created) await markNamespaceIndexComplete(client, tableName);
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `table '${tableName}' is not ACTIVE after ${TIMEOUT_MS} ms (status ${status})`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

async function tableStatus(client: DynamoDBClient, tableName: string): Promise<string | undefined> {
  try {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    return Table?.TableStatus;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return undefined;
    throw error;
  }
}

async function markNamespaceIndexComplete(client: DynamoDBClient, tableName: string) {
  const { pk, sk } = namespaceIndexKey(NAMESPACE_INDEX_COMPLETE);
  await client.send(
    new PutItemCommand({ TableName: tableName, Item: { pk: { S: pk }, sk: { S: sk } } }),
  );
}
