import * as z from 'zod';
import { canonicalAddress } from '../domain/address.ts';
import { showValue } from '../domain/field-path.ts';
import { isDns1123Subdomain } from '../domain/validation.ts';
import {
  emptyIsUnset,
  entrySpecFields,
  isString,
  metadataFields,
  text,
} from './istio-field-schemas.ts';

/** A hand-made WorkloadEntry document: one VM's address, labels and, optionally, its status. */

const ADDRESS_RULE = 'must be an IP address, a DNS name or a unix:// socket path';

/**
 * An IP address is held to the rules an agent's address is (lib/domain/address.ts), with the
 * same words: `10.0.0.300` is not a DNS name that happens to be numeric, it is a bad IPv4
 * address. Anything shaped like one (digits and dots only, or a colon) is checked as an IP.
 */
export function entryAddressProblem(value: unknown): string | undefined {
  if (!isString(value)) return ADDRESS_RULE;
  if (value.startsWith('unix://')) return undefined;
  if (/^[0-9.]+$/.test(value) || value.includes(':')) {
    const checked = canonicalAddress(value);
    return checked.ok ? undefined : checked.problem;
  }
  return isDns1123Subdomain(value) ? undefined : ADDRESS_RULE;
}

const address = z.custom<string>((v) => entryAddressProblem(v) === undefined, {
  error: (issue) => `${entryAddressProblem(issue.input)}, got ${showValue(issue.input)}`,
});

const condition = z.looseObject({
  type: text,
  status: z.enum(['True', 'False', 'Unknown']),
  reason: text.optional(),
  message: text.optional(),
  lastProbeTime: text.optional(),
  lastTransitionTime: text.optional(),
});

export const workloadEntrySchema = z.object({
  metadata: z.looseObject(metadataFields),
  spec: z.strictObject({ address: emptyIsUnset(address), ...entrySpecFields }),
  status: z.looseObject({ conditions: z.array(condition).optional() }).optional(),
});
