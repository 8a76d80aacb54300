// The port a namespace's live-entry quota reads its usage through
// (lib/registration/namespace-limits.ts); lib/store/dynamodb-namespace-usage.ts implements it.

/** How many of a namespace's entries are connected now. */
export interface NamespaceUsageReader {
  connectedEntries(namespace: string): Promise<number>;
}
