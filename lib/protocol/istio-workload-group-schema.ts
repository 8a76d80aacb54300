import * as z from 'zod';
import { parseCidrList } from '../domain/cidr.ts';
import { parseHeartbeat } from '../domain/heartbeat.ts';
import { GROUP_ANNOTATIONS } from '../domain/tenant-limits.ts';
import {
  annotations,
  check,
  emptyIsUnset,
  entrySpecFields,
  isInteger,
  isString,
  labels,
  metadataFields,
  port,
  text,
} from './istio-field-schemas.ts';

/** A WorkloadGroup document as an operator writes it: the template and probe its VMs share. */

const seconds = check<number>(
  (v) => isInteger(v, 0, 2 ** 31 - 1),
  'must be a whole number of seconds, 0 or more',
);

const probe = z
  .strictObject({
    initialDelaySeconds: seconds.optional(),
    timeoutSeconds: seconds.optional(),
    periodSeconds: seconds.optional(),
    successThreshold: seconds.optional(),
    failureThreshold: seconds.optional(),
    httpGet: z
      .strictObject({
        path: emptyIsUnset(
          check<string>(
            (v) => isString(v) && v.startsWith('/'),
            "must be a path starting with '/'",
          ),
        ),
        port,
        host: emptyIsUnset(text),
        scheme: emptyIsUnset(z.enum(['HTTP', 'HTTPS'])),
        httpHeaders: z.array(z.strictObject({ name: text, value: text })).optional(),
      })
      .optional(),
    tcpSocket: z.strictObject({ host: emptyIsUnset(text), port }).optional(),
    exec: z.strictObject({ command: z.array(text).min(1) }).optional(),
  })
  .superRefine((value, ctx) => {
    const handlers = ['httpGet', 'tcpSocket', 'exec'].filter((key) => key in value);
    if (handlers.length !== 1) {
      const found = handlers.length === 0 ? 'none' : handlers.join(', ');
      ctx.addIssue({
        code: 'custom',
        message: `must set exactly one of httpGet, tcpSocket, exec, got ${found}`,
      });
    }
  });

/** The registrar's own group annotations, checked where they are written (`apply`). */
const groupMetadata = z.looseObject(metadataFields).superRefine((metadata, ctx) => {
  const heartbeat = parseHeartbeat(metadata.annotations ?? {});
  if ('problem' in heartbeat) {
    ctx.addIssue({
      code: 'custom',
      path: ['annotations', heartbeat.annotation],
      message: heartbeat.problem,
    });
  }
  const key = GROUP_ANNOTATIONS.addressRanges;
  const ranges = metadata.annotations?.[key];
  if (ranges === undefined) return;
  const parsed = parseCidrList(ranges);
  const problem = !parsed.ok
    ? `'${parsed.item}' ${parsed.problem}`
    : parsed.cidrs.length === 0
      ? 'names no range'
      : undefined;
  if (problem !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['annotations', key],
      message: `must be comma-separated CIDRs (10.20.0.0/16,fd00::/64): ${problem}`,
    });
  }
});

export const workloadGroupSchema = z.object({
  metadata: groupMetadata,
  spec: z.strictObject({
    metadata: z
      .strictObject({ labels: labels.optional(), annotations: annotations.optional() })
      .optional(),
    template: z.strictObject({
      // Each entry takes the address its VM connects with; Istio refuses one here too.
      address: emptyIsUnset(
        check<never>(
          () => false,
          'must not be set in a WorkloadGroup template: each VM registers its own address',
        ),
      ),
      ...entrySpecFields,
    }),
    probe: probe.optional(),
  }),
});
