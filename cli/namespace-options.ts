import { InvalidArgumentError, Option } from 'commander';
import { parseCidrList } from '../lib/domain/cidr.ts';
import {
  NO_NETWORK,
  parseChecksPerMinute,
  parseNetworkName,
  parseRate,
} from '../lib/domain/namespace-settings.ts';

/**
 * The options that set what a namespace (or a join token, or an IAM policy) allows, as the
 * commands share them: each value is checked when the command line is read, so a bad one
 * names the option and the value and nothing is written (exit 2).
 */

/** `default` (or `any` for the lists): back to the default; the commands unset the field. */
export const RESET = Symbol('reset');
export type Resettable<T> = T | typeof RESET;

export function maxEntriesOption(): Option {
  return new Option(
    '--max-entries <n>',
    'most connected entries at once (a whole number), or "default"',
  ).argParser((text: string): Resettable<number> => {
    if (text === 'default') return RESET;
    const value = Number(text);
    if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value <= 0) {
      throw new InvalidArgumentError(`must be a positive whole number or "default", got '${text}'`);
    }
    return value;
  });
}

export function connectRateOption(): Option {
  return new Option(
    '--connect-rate <rate>',
    'most connects per second (50/s, 3000/m, 0.5), or "default"',
  ).argParser((text: string): Resettable<number> => {
    if (text === 'default') return RESET;
    const rate = parseRate(text);
    if (rate === undefined) {
      throw new InvalidArgumentError(
        `must be a positive rate such as 50/s, 3000/m or 0.5 (per second), or "default", got '${text}'`,
      );
    }
    return rate;
  });
}

export function heartbeatChecksOption(): Option {
  return new Option(
    '--heartbeat-checks <n>',
    'most heartbeat checks a minute its groups may ask of the sweeper (4800, 4800/m, 80/s), or "default"',
  ).argParser((text: string): Resettable<number> => {
    if (text === 'default') return RESET;
    const perMinute = parseChecksPerMinute(text);
    if (perMinute === undefined) {
      throw new InvalidArgumentError(
        `must be a positive whole number of checks a minute such as 4800, 4800/m or 80/s, or "default", got '${text}'`,
      );
    }
    return perMinute;
  });
}

/** `--networks a,b,<none>` (or `any` with `allowAny`). */
export function networksOption(what: string, allowAny = true): Option {
  const any = allowAny ? ', or "any"' : '';
  return new Option(
    '--networks <list>',
    `networks ${what} may be in, comma-separated (${NO_NETWORK}: an entry without a network)${any}`,
  ).argParser((text: string): Resettable<string[]> => {
    if (allowAny && text === 'any') return RESET;
    return parseNetworkList(text);
  });
}

export function parseNetworkList(text: string): string[] {
  const networks: string[] = [];
  for (const item of text.split(',')) {
    const network = parseNetworkName(item);
    if (network === undefined) {
      throw new InvalidArgumentError(
        `'${item.trim()}' is not a network name (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit; ${NO_NETWORK} for no network)`,
      );
    }
    if (!networks.includes(network)) networks.push(network);
  }
  return networks;
}

export function addressRangesOption(): Option {
  return new Option(
    '--address-ranges <cidrs>',
    'CIDRs every entry address must be in, comma-separated (10.0.0.0/16,fd00::/64), or "any"',
  ).argParser((text: string): Resettable<string[]> => {
    if (text === 'any') return RESET;
    const parsed = parseCidrList(text);
    if (!parsed.ok) throw new InvalidArgumentError(`'${parsed.item}' ${parsed.problem}`);
    if (parsed.cidrs.length === 0) {
      throw new InvalidArgumentError('names no range; give at least one CIDR, or "any"');
    }
    return parsed.cidrs.map((cidr) => cidr.text);
  });
}
