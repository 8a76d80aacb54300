import * as z from 'zod';
import { ANNOTATIONS } from '../domain/model.ts';
import { isDns1123Subdomain, isIpAddress } from '../domain/validation.ts';
import { formatPath, isRecord, showValue } from './istio-document-problems.ts';
import { check, entrySpecFields, isString, metadataFields, text } from './istio-field-schemas.ts';

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
  spec: z.strictObject({ address: address.optional(), ...entrySpecFields }),
  status: z.looseObject({ conditions: z.array(condition).optional() }).optional(),
});

/**
 * An entry that claims a group is one the registrar created and the sweeper may delete; an
 * operator writing one would forge that. Checked apart from the schema so it is reported even
 * when other fields of the document are wrong too.
 */
export function refuseAutoRegistered(metadata: unknown): string[] {
  const notes = isRecord(metadata) ? metadata.annotations : undefined;
  const group = isRecord(notes) ? notes[ANNOTATIONS.autoRegistrationGroup] : undefined;
  if (group === undefined) return [];
  const path = formatPath(['metadata', 'annotations', ANNOTATIONS.autoRegistrationGroup]);
  return [
    `${path}: only auto-registration sets this (entries of a group are created when its VMs connect); remove the annotation to add a hand-made entry, got ${showValue(group)}`,
  ];
}
