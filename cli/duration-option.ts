import { InvalidArgumentError, Option } from 'commander';
import { parseDuration } from '../lib/domain/duration.ts';

/** Every unit `parseDuration` reads, for error messages that list them all. */
export const DURATION_UNITS = 'ms, s, m, h or d';

/**
 * A positive duration flag (`90s`, `5m`, `2h`, `7d`, `1h30m`); 0 is refused, since for a
 * grace period or a token lifetime it would mean "nothing" or "everything at once".
 */
export function positiveDurationOption(
  flags: string,
  description: string,
  fallback?: string,
): Option {
  const option = new Option(flags, description).argParser(parsePositiveDuration);
  return fallback === undefined
    ? option
    : option.default(parsePositiveDuration(fallback), fallback);
}

export function parsePositiveDuration(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) {
    throw new InvalidArgumentError(
      `must be a positive duration with a unit, ${DURATION_UNITS} (such as 90s, 5m, 2h, 7d or 1h30m)`,
    );
  }
  return ms;
}
