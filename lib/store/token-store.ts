import type { EpochMillis } from '../domain/model.ts';

/** A join token as stored: never the secret, only its SHA-256. */
export interface StoredToken {
  id: string;
  secretHash: string;
  namespace: string;
  serviceAccount?: string;
  createdAt: EpochMillis;
  expiresAt: EpochMillis;
  revokedAt?: EpochMillis;
  /** The networks entries registered with this token may be in; unset, any. */
  networks?: string[];
}

export interface TokenStore {
  putToken(token: StoredToken): Promise<void>;
  getToken(id: string): Promise<StoredToken | undefined>;
  listTokens(): Promise<StoredToken[]>;
  /** Marks the token revoked; false when no such token exists. */
  revokeToken(id: string, at: EpochMillis): Promise<boolean>;
}
