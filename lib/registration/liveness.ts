import type { EpochMillis } from '../domain/model.ts';
import type { Holder } from '../store/registry-store.ts';

/**
 * Whether a connection still exists, as API Gateway knows it (`GET @connections/{id}`).
 * `$disconnect` is best-effort: a crash, a failed write or a lost response can leave a
 * connection listed as a holder after it closed. Only API Gateway's own answer that the
 * connection is gone (410) may drop it; any other failure is 'unknown' and drops nothing, so
 * a fault of the management API never disconnects a live VM.
 */
export interface ConnectionLiveness {
  check(connectionId: string): Promise<'alive' | 'gone' | 'unknown'>;
}

/**
 * The holders API Gateway says are gone, checked side by side. A holder younger than
 * `settleMs` is not asked: API Gateway answers 410 for a connection whose `$connect` is still
 * running too, and dropping it would leave a connection that is about to open holding nothing.
 */
export async function goneHolders(
  liveness: ConnectionLiveness,
  holders: readonly Holder[],
  now: EpochMillis,
  settleMs: number,
): Promise<string[]> {
  const settled = holders.filter((h) => h.since === undefined || now - h.since >= settleMs);
  const answers = await Promise.all(settled.map((h) => liveness.check(h.connectionId)));
  return settled.filter((_, i) => answers[i] === 'gone').map((h) => h.connectionId);
}
