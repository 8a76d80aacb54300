import type * as z from 'zod';
import { InvalidRequestError } from '../domain/errors.ts';
import { formatPath, showValue } from '../domain/field-path.ts';

export { formatPath, showValue };

/** How a refused document is reported: where the problem is, what was expected, what was found. */

/** Every problem of the input, one line each, so the operator can fix them in one go. */
export class InvalidDocumentsError extends InvalidRequestError {
  readonly problems: string[];

  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.problems = problems;
  }
}

/** `document 2 (WorkloadGroup web)`: where a problem is, in words the operator can find. */
export function describeDocument(label: string, raw: unknown): string {
  if (!isRecord(raw)) return label;
  const kind = typeof raw.kind === 'string' ? raw.kind : 'unknown kind';
  const meta = raw.metadata;
  const objectName = isRecord(meta) && typeof meta.name === 'string' ? meta.name : '<unnamed>';
  return `${label} (${kind} ${objectName})`;
}

export function describeIssue(issue: z.core.$ZodIssue, body: unknown): string[] {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => `${formatPath([...issue.path, key])}: unknown field`);
  }
  const path = formatPath(issue.path);
  const value = valueAt(body, issue.path);
  if (value === undefined) return [`${path}: is required`];
  if (issue.code === 'invalid_type')
    return [
      `${path}: must be ${EXPECTED[issue.expected] ?? issue.expected}, got ${showValue(value)}`,
    ];
  if (issue.code === 'invalid_value')
    return [`${path}: must be one of ${issue.values.join(', ')}, got ${showValue(value)}`];
  if (issue.code === 'too_small') return [`${path}: must not be empty`];
  return [`${path}: ${issue.message}`];
}

const EXPECTED: Record<string, string> = {
  object: 'a mapping',
  record: 'a mapping',
  array: 'a list',
  string: 'a string',
  number: 'a number',
};

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let at: unknown = root;
  for (const segment of path) {
    if (!isRecord(at) && !Array.isArray(at)) return undefined;
    at = (at as Record<PropertyKey, unknown>)[segment];
  }
  return at;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
