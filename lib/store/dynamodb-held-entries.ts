import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { HeldEntry, HeldEntryReader } from '../auth/held-entry-reader.ts';
import type { VerifiedIdentity } from '../domain/model.ts';
import type { RegistryTable } from './dynamodb-table.ts';
import { ENTRY_PREFIX, holderPrincipals, type Item, namespacePartition } from './item-codec.ts';

/**
 * The connected entries of one namespace, with who authenticated each holder: one Query of
 * the namespace's partition (`NS#<namespace>`, sort keys `WE#...`), filtered to entries that
 * have holders. The filter saves transfer, not reads: DynamoDB bills every item the Query
 * reads, so a revocation costs about one read unit per 4 KB of the namespace's entries
 * (docs/cost.md), paid by the operator's command, never by the event path.
 */
export class DynamoDbHeldEntries implements HeldEntryReader {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  async *connectedEntries(namespace: string): AsyncIterable<HeldEntry> {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.#table.client.send(
        new QueryCommand({
          TableName: this.#table.name,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :entries)',
          FilterExpression: 'attribute_exists(conns)',
          ExpressionAttributeValues: {
            ':pk': namespacePartition(namespace),
            ':entries': ENTRY_PREFIX,
          },
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) yield heldEntryOf(namespace, item);
      start = page.LastEvaluatedKey;
    } while (start);
  }
}

function heldEntryOf(namespace: string, item: Item): HeldEntry {
  const principals = holderPrincipals(item);
  const conns = [...((item.conns as Set<string> | undefined) ?? [])].sort();
  const held: HeldEntry = {
    entry: { namespace, name: String(item.sk).slice(ENTRY_PREFIX.length) },
    holders: conns.map((connectionId) =>
      principals[connectionId] === undefined
        ? { connectionId }
        : { connectionId, principal: principals[connectionId] },
    ),
  };
  const identity = item.identity as VerifiedIdentity | undefined;
  if (identity?.principal !== undefined) held.newestPrincipal = identity.principal;
  return held;
}
