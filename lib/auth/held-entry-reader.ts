import type { ObjectRef } from '../domain/model.ts';

// The port revocation (lib/auth/revocation.ts) reads held entries through, beside it; the
// adapter (lib/store/dynamodb-held-entries.ts) implements it.

/** A connected entry of the credential's namespace, and who authenticated each holder. */
export interface HeldEntry {
  entry: ObjectRef;
  holders: { connectionId: string; principal?: string }[];
  /** The entry's verified identity: the newest connect's. */
  newestPrincipal?: string;
}

/** The connected entries of a namespace: one Query of it, never a Scan. */
export interface HeldEntryReader {
  connectedEntries(namespace: string): AsyncIterable<HeldEntry>;
}
