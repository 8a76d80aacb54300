import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** One request as the store sent it (document-client form, before marshalling). */
export interface RecordedRequest {
  command: string;
  input: Record<string, unknown>;
}

export interface RequestCounter {
  /** Requests per command name (`GetItem`, `UpdateItem`, ...), failed ones included. */
  counts(): Record<string, number>;
  /** Items DynamoDB read to answer: GetItem hits, Query/Scan `ScannedCount`, BatchGet responses. */
  itemsRead(): number;
  /** Every request since the last reset, in order: tests pin their exact shape. */
  requests(): RecordedRequest[];
  reset(): void;
}

const NAME = 'registrarRequestCounter';

/**
 * Counts the DynamoDB requests sent through a client, for the benchmark and for tests that
 * assert the per-event request budget of the design (for example "disconnect = 1 read +
 * 1 write"). Counted at the initialize step, so an SDK retry of a throttled request counts once:
 * the budget is about what the code asks for. Adding it twice to one client replaces the first.
 */
export function countRequests(client: DynamoDBClient | DynamoDBDocumentClient): RequestCounter {
  let counts: Record<string, number> = {};
  let itemsRead = 0;
  let requests: RecordedRequest[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? 'Unknown').replace(/Command$/, '');
      counts[command] = (counts[command] ?? 0) + 1;
      requests.push({ command, input: structuredClone(args.input as Record<string, unknown>) });
      const result = await next(args);
      itemsRead += itemsIn(result.output);
      return result;
    },
    { step: 'initialize', name: NAME, override: true },
  );
  return {
    counts: () => ({ ...counts }),
    itemsRead: () => itemsRead,
    requests: () => [...requests],
    reset: () => {
      counts = {};
      itemsRead = 0;
      requests = [];
    },
  };
}

function itemsIn(raw: unknown): number {
  const output = raw as Record<string, unknown> | undefined;
  if (!output) return 0;
  if (typeof output.ScannedCount === 'number') return output.ScannedCount;
  if ('Item' in output) return output.Item === undefined ? 0 : 1;
  const responses = output.Responses;
  if (responses && typeof responses === 'object' && !Array.isArray(responses)) {
    return Object.values(responses).reduce(
      (sum: number, items) => sum + (Array.isArray(items) ? items.length : 0),
      0,
    );
  }
  return 0;
}
