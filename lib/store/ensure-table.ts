import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { createTableInput } from './table-definition.ts';

const POLL_MS = 50;
const TIMEOUT_MS = 60_000;

/**
 * Creates the registry table when it is missing and waits until it is ACTIVE. Used by the local
 * runtime and tests only: on AWS the CDK stack owns the table.
 */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  if ((await tableStatus(client, tableName)) === undefined) {
    try {
      await client.send(new CreateTableCommand(createTableInput(tableName)));
    } catch (error) {
      // Two processes starting at once (the local runtime and a CLI) may both try to create it.
      if (!(error instanceof ResourceInUseException)) throw error;
    }
  }
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const status = await tableStatus(client, tableName);
    if (status === 'ACTIVE') return;
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
