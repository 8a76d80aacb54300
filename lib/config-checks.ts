import { type MinorLine, parseMinorLine } from './domain/agent-skew.ts';
import { parseDuration } from './domain/duration.ts';

/**
 * The checks of one configuration value, as plain functions: `readConfig` runs them in every
 * Lambda function, where a validation library would add ~85 KB to each bundle for a handful of
 * string checks (issue 27), and `config-schemas.ts` wraps the same functions for the stack's
 * options, so a value means the same at synth and at run time. Each returns the parsed value
 * or an `Invalid` that says what is wrong with the text.
 */
export class Invalid {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

export type Check<T> = (text: string) => T | Invalid;

/** A positive duration (`500ms`, `10s`, `5m`, `2h`); 0 or negative is an error. */
export const positiveDuration: Check<number> = (text) => {
  const ms = parseDuration(text);
  return ms === undefined || ms <= 0
    ? new Invalid(`must be a positive duration such as 500ms, 10s, 5m or 2h, got '${text}'`)
    : ms;
};

export const positiveInteger: Check<number> = (text) => {
  const value = Number(text);
  return Number.isInteger(value) && value > 0
    ? value
    : new Invalid(`must be a positive integer, got '${text}'`);
};

/** A whole number from `min` to `max` (a count with a ceiling, such as heartbeat lanes). */
export function wholeNumberIn(min: number, max: number): Check<number> {
  return (text) => {
    const value = Number(text);
    return text.trim() !== '' && Number.isInteger(value) && value >= min && value <= max
      ? value
      : new Invalid(`must be a whole number from ${min} to ${max}, got '${text}'`);
  };
}

/** A share strictly between 0 and 1, written `55%` or `0.55`. */
export const share: Check<number> = (text) => {
  const trimmed = text.trim();
  const value = trimmed.endsWith('%') ? Number(trimmed.slice(0, -1)) / 100 : Number(trimmed);
  return trimmed === '' || !Number.isFinite(value) || value <= 0 || value >= 1
    ? new Invalid(`must be a share between 0 and 1 (exclusive) such as 55% or 0.55, got '${text}'`)
    : value;
};

/** A positive rate such as `0.1` (fractions allowed: one deletion every 10 s). */
export const positiveRate: Check<number> = (text) => {
  const value = Number(text);
  return text.trim() === '' || !Number.isFinite(value) || value <= 0
    ? new Invalid(`must be a positive number of deletions per second such as 0.1, got '${text}'`)
    : value;
};

/** The EC2 states the registrar may act on: the ones after which a VM is gone or going. */
export const EC2_REMOVAL_STATES = ['shutting-down', 'terminated', 'stopping', 'stopped'] as const;

/** A comma-separated list of EC2 states, each one of EC2_REMOVAL_STATES. */
export const ec2States: Check<string[]> = (text) => {
  const states = listOf(text);
  const unknown = states.filter((s) => !(EC2_REMOVAL_STATES as readonly string[]).includes(s));
  return states.length === 0 || unknown.length > 0
    ? new Invalid(
        `must be a comma-separated list of ${EC2_REMOVAL_STATES.join(', ')}, got '${text}'`,
      )
    : [...new Set(states)];
};

/** A comma-separated list of AWS Region names (`eu-west-1,us-east-1`). */
export const regionList: Check<string[]> = (text) => {
  const regions = [...new Set(listOf(text))];
  const bad = regions.filter((region) => !/^[a-z]{2}(-[a-z]+)+-\d+$/.test(region));
  return regions.length === 0 || bad.length > 0
    ? new Invalid(
        `must be a comma-separated list of AWS Regions such as eu-west-1,us-east-1, got '${text}'`,
      )
    : regions;
};

/**
 * A URL the platform's parser accepts (as zod's `z.url()` did: any scheme), surrounding
 * spaces trimmed and tabs and line breaks removed, so the value used is the one checked.
 */
export const url: Check<string> = (text) => {
  const trimmed = text.trim();
  return URL.canParse(trimmed) ? trimmed.replace(/[\t\n\r]/g, '') : new Invalid('Invalid URL');
};

/** One of a few words; the message lists them. */
export function oneOf<const T extends string>(words: readonly T[], message?: string): Check<T> {
  return (text) =>
    (words as readonly string[]).includes(text)
      ? (text as T)
      : new Invalid(
          message ?? `Invalid option: expected one of ${words.map((w) => `"${w}"`).join('|')}`,
        );
}

/** A release line, `MAJOR.MINOR` (the oldest agent release accepted). */
export const minorLine: Check<MinorLine> = (text) =>
  parseMinorLine(text) ?? new Invalid('must be MAJOR.MINOR, such as 0.1');

/** Any text (the value is already known to be set and non-empty). */
export const anyText: Check<string> = (text) => text;

function listOf(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}
