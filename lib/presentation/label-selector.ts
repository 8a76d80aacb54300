import { isLabelKey, isLabelValue } from '../domain/validation.ts';

/**
 * `-l/--selector` as kubectl reads it, for the equality-based part of Kubernetes label
 * selectors: `key=value` (also `key==value`), `key!=value`, `key` (the label exists) and
 * `!key` (it does not), joined by commas, all of which must hold. Set-based requirements
 * (`in`, `notin`) and `<`/`>` are refused by name rather than misread.
 */

export type Requirement =
  | { key: string; op: 'equals'; value: string }
  | { key: string; op: 'notEquals'; value: string }
  | { key: string; op: 'exists' }
  | { key: string; op: 'notExists' };

export type LabelSelector = readonly Requirement[];

export const SELECTOR_HELP =
  "label selector: 'key=value', 'key!=value', 'key' (has the label), '!key' (lacks it), comma-joined (all must hold); set-based 'in'/'notin' is not supported";

const SUPPORTED = "supported: key=value, key==value, key!=value, key, !key, joined by ','";

/** An invalid selector, naming the requirement; the CLI makes it a usage error, the dashboard a 400. */
export class LabelSelectorError extends Error {
  override name = 'LabelSelectorError';
}

/** Throws LabelSelectorError for an invalid selector. */
export function parseLabelSelector(text: string): LabelSelector {
  if (/[()]|\s(in|notin)\s/.test(` ${text} `)) {
    throw new LabelSelectorError(
      `set-based requirements (in, notin) are not supported in '${text}'; ${SUPPORTED}`,
    );
  }
  const trimmed = text.trim();
  if (trimmed === '') return [];
  return trimmed.split(',').map((part) => parseRequirement(part.trim()));
}

function parseRequirement(part: string): Requirement {
  if (part === '') throw new LabelSelectorError(`empty requirement between commas; ${SUPPORTED}`);
  if (/[<>]/.test(part)) {
    throw new LabelSelectorError(`'${part}': '<' and '>' are not supported; ${SUPPORTED}`);
  }
  const match = /^(.*?)(!=|==|=)(.*)$/.exec(part);
  if (!match) {
    const negated = part.startsWith('!');
    const key = checkKey(negated ? part.slice(1).trim() : part, part);
    return { key, op: negated ? 'notExists' : 'exists' };
  }
  const [, rawKey = '', operator, rawValue = ''] = match;
  const key = checkKey(rawKey.trim(), part);
  const value = rawValue.trim();
  if (!isLabelValue(value)) {
    throw new LabelSelectorError(
      `'${part}': invalid label value '${value}': at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
    );
  }
  return operator === '!=' ? { key, op: 'notEquals', value } : { key, op: 'equals', value };
}

function checkKey(key: string, part: string): string {
  if (!isLabelKey(key)) {
    throw new LabelSelectorError(
      `'${part}': invalid label key '${key}': [prefix/]name, the name at most 63 letters, digits, '-', '_' or '.'; ${SUPPORTED}`,
    );
  }
  return key;
}

/** Whether labels satisfy every requirement; `key!=value` holds when the label is absent, as in Kubernetes. */
export function matchesSelector(
  selector: LabelSelector,
  labels: Record<string, string> | undefined,
): boolean {
  const has = (key: string) => labels !== undefined && Object.hasOwn(labels, key);
  return selector.every((requirement) => {
    if (requirement.op === 'exists') return has(requirement.key);
    if (requirement.op === 'notExists') return !has(requirement.key);
    const actual = has(requirement.key) ? labels?.[requirement.key] : undefined;
    return requirement.op === 'equals'
      ? actual === requirement.value
      : actual !== requirement.value;
  });
}
