import type { DisconnectChange, DisconnectResult, RegistryStore } from '../store/registry-store.ts';

/**
 * `$disconnect`: marks the entry disconnected so the sweeper deletes it after the grace
 * period. The store's conditional write makes the rules hold under races:
 * - another live connection still holds the entry (the agent reconnected before the old
 *   connection closed: make before break): only this connection is dropped ('still-held');
 * - API Gateway delivers `$disconnect` best-effort and possibly late or twice: a disconnect
 *   of a connection already gone changes nothing ('unchanged');
 * - a connection that registered nothing writes nothing ('unknown-connection').
 */
export async function unregisterWorkload(
  store: Pick<RegistryStore, 'disconnect'>,
  change: DisconnectChange,
): Promise<DisconnectResult> {
  return store.disconnect(change);
}
