import type { EpochMillis } from './model.ts';

/**
 * A join token as stored: never the secret, only its SHA-256. Plain data that the wire (the
 * authorizer's context, lib/protocol/identity.ts), lib/auth and the token store all speak of.
 */
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
