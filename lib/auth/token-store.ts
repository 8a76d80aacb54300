import type { EpochMillis } from '../domain/model.ts';
import type { StoredToken } from '../domain/stored-token.ts';

/**
 * The join tokens: `registrar token` creates, lists and revokes them; the authorizer reads one
 * per connect (lib/auth/join-token.ts verifies it). Only the secret's hash is stored.
 */
export interface TokenStore {
  putToken(token: StoredToken): Promise<void>;
  getToken(id: string): Promise<StoredToken | undefined>;
  listTokens(): Promise<StoredToken[]>;
  /** Marks the token revoked; false when no such token exists. */
  revokeToken(id: string, at: EpochMillis): Promise<boolean>;
}
