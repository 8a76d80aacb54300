import * as z from 'zod';
import { isDns1123Subdomain, isIpAddress } from '../domain/validation.ts';
import {
  check,
  emptyIsUnset,
  entrySpecFields,
  isString,
  metadataFields,
  text,
} from './istio-field-schemas.ts';

/** A hand-made WorkloadEntry document: one VM's address, labels and, optionally, its status. */

const address = check<string>(
  (v) => isString(v) && (isIpAddress(v) || isDns1123Subdomain(v) || v.startsWith('unix://')),
  'must be an IP address, a DNS name or a unix:// socket path',
);

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
