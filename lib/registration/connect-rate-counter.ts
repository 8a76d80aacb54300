import type { EpochMillis } from '../domain/model.ts';

// The port a namespace's connect rate is counted through (lib/registration/namespace-limits.ts);
// lib/store/dynamodb-connect-rate.ts implements it.

/** What the connect path needs: count one connect against a namespace's rate, or refuse it. */
export interface ConnectRateCounter {
  /**
   * True when the connect is counted within the window's budget; false when the budget is used
   * up (nothing was written). `op` names the connect (its connection id), so the SDK retrying
   * a write whose response was lost is recognised as ours.
   */
  admit(namespace: string, perSecond: number, at: EpochMillis, op: string): Promise<boolean>;
}
