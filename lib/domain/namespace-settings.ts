/**
 * What the operator allows one namespace (DESIGN: fair shares, trusted data decides): its
 * quotas (live entries, connect rate), the networks its entries may be in, and the address
 * ranges its entries' addresses must fall in. Every field is optional: unset is the default.
 * Pure: the model, its defaults, and the text forms the CLI reads and prints.
 */
import type { EpochMillis } from './model.ts';
import { isNetworkName } from './validation.ts';

export interface NamespaceSettings {
  namespace: string;
  /** Most connected entries at once (a reconnect of an entry already connected is always let in). */
  maxEntries?: number;
  /** Connects per second, counted over fixed windows (lib/domain/connect-rate.ts). */
  connectRate?: number;
  /**
   * The networks its entries may be in (`spec.network`, the agent's or the template's); the
   * empty string is "no network". Unset: any, as Istio lets a proxy name its network.
   */
  networks?: string[];
  /** CIDRs every entry's address must be in. Unset: any address a VM can be reached at. */
  addressRanges?: string[];
  /**
   * Heartbeat checks a minute its groups may ask of the sweeper (lib/domain/heartbeat-pace.ts:
   * each held VM of a heartbeat group counts its group's checks a minute). Unset: the default.
   */
  heartbeatChecks?: number;
  updatedAt?: EpochMillis;
}

/**
 * Limits of a namespace the operator did not set: above what a normal fleet meets, so they
 * refuse only runaway or hostile volume. 200,000 entries is twice the 100,000 VMs one region
 * serves; 1,000 connects/s is twice API Gateway's default quota of new connections per second
 * for the whole account (500), so a reconnect storm the gateway lets through is never refused
 * by the default (`npm run bench -- quota`: a storm at 500/s exactly at a 500/s rate had 2 %
 * refused, since connects pick counter shards at random).
 */
export const DEFAULT_LIMITS = { maxEntries: 200_000, connectRate: 1000 } as const;

export interface EffectiveLimits {
  maxEntries: number;
  connectRate: number;
}

export function effectiveLimits(settings: NamespaceSettings | undefined): EffectiveLimits {
  return {
    maxEntries: settings?.maxEntries ?? DEFAULT_LIMITS.maxEntries,
    connectRate: settings?.connectRate ?? DEFAULT_LIMITS.connectRate,
  };
}

/** How "no network" is written on the command line and shown, as kubectl shows empty values. */
export const NO_NETWORK = '<none>';

/** `50/s`, `50`, `3000/m`, `0.5/s` -> connects per second; undefined when not a positive rate. */
export function parseRate(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*(s|m|h))?\s*$/.exec(text);
  if (!match) return undefined;
  const per = { s: 1, m: 60, h: 3600 }[(match[2] ?? 's') as 's' | 'm' | 'h'];
  const rate = Number(match[1]) / per;
  return rate > 0 && Number.isFinite(rate) ? rate : undefined;
}

/** A rate as the CLI shows it: `500/s`, `0.5/s`. */
export function formatRate(perSecond: number): string {
  return `${Number(perSecond.toPrecision(6))}/s`;
}

/**
 * `4800`, `4800/m`, `80/s` -> heartbeat checks a minute (whole); undefined when not a
 * positive number of checks a minute.
 */
export function parseChecksPerMinute(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(?:\/\s*(s|m))?\s*$/.exec(text);
  if (!match) return undefined;
  const perMinute = Number(match[1]) * (match[2] === 's' ? 60 : 1);
  return Number.isSafeInteger(perMinute) && perMinute > 0 ? perMinute : undefined;
}

/** `4800/m`: heartbeat checks a minute as the CLI shows and takes them. */
export function formatChecksPerMinute(perMinute: number): string {
  return `${perMinute}/m`;
}

/** A network as shown: its name, or `<none>` for no network. */
export function formatNetwork(network: string): string {
  return network === '' ? NO_NETWORK : network;
}

/**
 * A network name as an operator lists it: `<none>` is the empty network. Names are what Istio
 * accepts in `spec.network` and the `topology.istio.io/network` label: a label value.
 */
export function parseNetworkName(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed === NO_NETWORK) return '';
  return isNetworkName(trimmed) ? trimmed : undefined;
}
