import * as z from 'zod';
import type { StringMap } from '../domain/model.ts';
import {
  isDns1123Label,
  isDns1123Subdomain,
  isLabelKey,
  isLabelValue,
  isLocality,
  isNetworkName,
} from '../domain/validation.ts';
import { showValue } from './istio-document-problems.ts';

/** Field schemas that WorkloadGroup and WorkloadEntry documents share: names, labels, ports. */

// Kubernetes' limit for all annotations of one object together.
const MAX_ANNOTATION_BYTES = 256 * 1024;

/** A leaf check whose refusal names what was expected and what was found. */
export function check<T>(predicate: (value: unknown) => boolean, expected: string) {
  return z.custom<T>(predicate, { error: (issue) => `${expected}, got ${showValue(issue.input)}` });
}

export const isString = (v: unknown): v is string => typeof v === 'string';
export const isInteger = (v: unknown, min: number, max: number) =>
  Number.isInteger(v) && (v as number) >= min && (v as number) <= max;

const SUBDOMAIN_RULE =
  "a DNS-1123 subdomain (lower case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)";
const name = check<string>(
  (v) => isString(v) && isDns1123Subdomain(v),
  `must be ${SUBDOMAIN_RULE}`,
);
const namespace = check<string>(
  (v) => isString(v) && isDns1123Label(v),
  "must be a DNS-1123 label (lower case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)",
);
/**
 * An optional string field where "" means unset, as Kubernetes reads it: `serviceAccount: ""`
 * is no service account, `namespace: ""` the default namespace. The empty value is dropped
 * before the field's own check, so it is neither refused nor stored.
 */
export function emptyIsUnset<T>(schema: z.ZodType<T>) {
  return z.preprocess((value) => (value === '' ? undefined : value), schema.optional());
}

export const port = check<number>((v) => isInteger(v, 1, 65535), 'must be a port number 1-65535');
export const text = check<string>(isString, 'must be a string');

/**
 * `ports` of a template or entry: name -> number. Istio refuses a port name that is not a
 * DNS-1123 label (its `ValidatePortName`), so an entry with one would be accepted here and
 * then fail when projected into the mesh. Issues name the port, so the path reads
 * `spec.ports.HTTP`.
 */
const ports = z
  .record(z.string(), z.unknown())
  .superRefine((map, ctx) => {
    for (const [portName, value] of Object.entries(map)) {
      if (!isDns1123Label(portName)) {
        const message = `invalid port name: must be a DNS-1123 label (lower case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters), as Istio requires, got ${showValue(portName)}`;
        ctx.addIssue({ code: 'custom', path: [portName], message });
      }
      if (!isInteger(value, 1, 65535)) {
        const message = `must be a port number 1-65535, got ${showValue(value)}`;
        ctx.addIssue({ code: 'custom', path: [portName], message });
      }
    }
  })
  .transform((map) => map as Record<string, number>);

/** Labels or annotations: keys in Kubernetes syntax; label values too. Issues name the key. */
function stringMap(kind: 'label' | 'annotation') {
  return z
    .record(z.string(), z.unknown())
    .superRefine((map, ctx) => {
      for (const [key, value] of Object.entries(map)) {
        if (!isLabelKey(key)) {
          const message = `invalid ${kind} key: must be an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, got ${showValue(key)}`;
          ctx.addIssue({ code: 'custom', path: [key], message });
        } else if (typeof value !== 'string') {
          const message = `must be a string (quote it in YAML), got ${showValue(value)}`;
          ctx.addIssue({ code: 'custom', path: [key], message });
        } else if (kind === 'label' && !isLabelValue(value)) {
          const message = `must be a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit (or empty), got ${showValue(value)}`;
          ctx.addIssue({ code: 'custom', path: [key], message });
        }
      }
      const bytes = Object.entries(map).reduce((n, [k, v]) => n + k.length + String(v).length, 0);
      if (kind === 'annotation' && bytes > MAX_ANNOTATION_BYTES) {
        ctx.addIssue({ code: 'custom', message: `must total at most 256 KiB, got ${bytes} bytes` });
      }
    })
    .transform((map) => map as StringMap);
}
export const labels = stringMap('label');
export const annotations = stringMap('annotation');

const locality = check<string>(
  (v) => isString(v) && isLocality(v),
  'must be region, region/zone or region/zone/subzone, each part a label value',
);

/** The fields a WorkloadGroup template and a WorkloadEntry spec have in common. */
export const entrySpecFields = {
  ports: ports.optional(),
  labels: labels.optional(),
  network: emptyIsUnset(
    check<string>(
      (v) => isString(v) && isNetworkName(v),
      "must be a network name: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
    ),
  ),
  locality: emptyIsUnset(locality),
  weight: check<number>(
    (v) => isInteger(v, 0, 2 ** 32 - 1),
    'must be a whole number 0-4294967295',
  ).optional(),
  serviceAccount: emptyIsUnset(
    check<string>((v) => isString(v) && isDns1123Subdomain(v), `must be ${SUBDOMAIN_RULE}`),
  ),
};

// Server-set fields (uid, generation, resourceVersion, ...) are accepted and dropped, so the
// output of `get -o yaml` can be applied again; the registry sets its own.
export const metadataFields = {
  name,
  namespace: emptyIsUnset(namespace),
  labels: labels.optional(),
  annotations: annotations.optional(),
};
