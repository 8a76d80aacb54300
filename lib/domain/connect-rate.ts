/**
 * A namespace's connect rate, counted in fixed windows over sharded counters
 * (lib/store/dynamodb-connect-rate.ts). Pure: which window a connect falls in, how many
 * connects the window admits, and how that budget is split over counter shards.
 *
 * Why fixed windows over shards: a reconnect storm of one namespace arrives at up to API
 * Gateway's 500 connects/s; one counter item written by every connect would be a hot key at
 * that rate (and at any raised account quota). Split over up to MAX_RATE_SHARDS items, each
 * takes at most an eighth, and each shard admits its own share, so the namespace as a whole
 * admits exactly the window's budget with no read before the write.
 *
 * A fixed window admits its budget whenever in the window it comes: at a window's end and the
 * next one's start, up to twice the rate may pass within one second. That is the price of one
 * conditional write per connect and no clock shared between function instances.
 */
import type { EpochMillis } from './model.ts';

/** Counter items a namespace's budget is split over, at most. */
export const MAX_RATE_SHARDS = 8;
/** Each shard holds at least this many connects of a window (a small budget uses fewer shards). */
const MIN_PER_SHARD = 4;

export interface RateWindow {
  /** Epoch milliseconds the window starts at (a multiple of its length). */
  start: EpochMillis;
  lengthMs: number;
  /** Connects the whole window admits: rate x length, at least 1. */
  budget: number;
  shards: number;
}

/**
 * The window `at` falls in, for a rate of `perSecond`. One second long while the rate admits at
 * least one connect a second; a slower rate (0.1/s) gets a window long enough for one (10 s).
 */
export function rateWindow(perSecond: number, at: EpochMillis): RateWindow {
  const lengthMs = perSecond >= 1 ? 1000 : Math.ceil(1 / perSecond) * 1000;
  const budget = Math.max(1, Math.floor((perSecond * lengthMs) / 1000));
  const shards = Math.max(1, Math.min(MAX_RATE_SHARDS, Math.floor(budget / MIN_PER_SHARD)));
  return { start: Math.floor(at / lengthMs) * lengthMs, lengthMs, budget, shards };
}

/** What one shard admits: the budget split evenly, the remainder to the first shards. */
export function shardCapacity(window: RateWindow, shard: number): number {
  const even = Math.floor(window.budget / window.shards);
  return even + (shard < window.budget % window.shards ? 1 : 0);
}
