import { createHash } from 'node:crypto';

/**
 * The uid of an auto-registered entry, which the registry never stored (istiod's entries get
 * theirs from the API server): a UUID-shaped digest of the entry's namespace, name and creation
 * time. Stable for the entry's whole life (a reconnect never changes its creation time), new
 * for an entry of the same name registered again after a delete, and the same wherever it is
 * rendered (`get`, `describe`, the dashboard, the agent's `describe` reply), with no write.
 */
export function derivedEntryUid(namespace: string, name: string, createdAt: string): string {
  const hex = createHash('sha256').update(`${namespace}\0${name}\0${createdAt}`).digest('hex');
  // RFC 9562's layout, version 8 (custom) and the RFC variant, so tools that parse UUIDs take it.
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return [
    hex.slice(0, 8),
    hex.slice(8, 12),
    `8${hex.slice(13, 16)}`,
    `${variant}${hex.slice(17, 20)}`,
    hex.slice(20, 32),
  ].join('-');
}
