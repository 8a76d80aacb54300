import { parseAllDocuments } from 'yaml';
import { type core, z } from 'zod';
import { InvalidRequestError } from '../domain/errors.ts';
import {
  ACCEPTED_API_VERSIONS,
  ANNOTATIONS,
  type Condition,
  ISTIO_API_VERSION,
  type StringMap,
  type WorkloadEntry,
  type WorkloadGroup,
} from '../domain/model.ts';
import {
  isDns1123Label,
  isDns1123Subdomain,
  isIpAddress,
  isLabelKey,
  isLabelValue,
  isLocality,
  isNetworkName,
} from '../domain/validation.ts';

/**
 * WorkloadGroup and hand-made WorkloadEntry documents, as an operator writes them for Istio
 * (YAML or JSON, several per input), validated before anything is written: one invalid
 * document refuses the whole input, so an apply never leaves half a change behind.
 */

/** Where a document without `metadata.namespace` goes, as with kubectl. */
export const DEFAULT_NAMESPACE = 'default';

export type IstioDocument =
  | { index: number; kind: 'WorkloadGroup'; group: WorkloadGroup }
  | { index: number; kind: 'WorkloadEntry'; entry: WorkloadEntry };

/** Every problem of the input, one line each, so the operator can fix them in one go. */
export class InvalidDocumentsError extends InvalidRequestError {
  readonly problems: string[];

  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.problems = problems;
  }
}

export interface ParseOptions {
  /** The namespace asked for on the command line; documents naming another are refused. */
  namespace?: string;
}

// Kubernetes' limit for all annotations of one object together.
const MAX_ANNOTATION_BYTES = 256 * 1024;

/** Shows a value the way the messages quote it: strings in single quotes, the rest as JSON. */
export function showValue(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}

/** A leaf check whose refusal names what was expected and what was found. */
function check<T>(predicate: (value: unknown) => boolean, expected: string) {
  return z.custom<T>(predicate, { error: (issue) => `${expected}, got ${showValue(issue.input)}` });
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isInteger = (v: unknown, min: number, max: number) =>
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
const port = check<number>((v) => isInteger(v, 1, 65535), 'must be a port number 1-65535');
const seconds = check<number>(
  (v) => isInteger(v, 0, 2 ** 31 - 1),
  'must be a whole number of seconds, 0 or more',
);
const text = check<string>(isString, 'must be a string');

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
const labels = stringMap('label');
const annotations = stringMap('annotation');

const address = check<string>(
  (v) => isString(v) && (isIpAddress(v) || isDns1123Subdomain(v) || v.startsWith('unix://')),
  'must be an IP address, a DNS name or a unix:// socket path',
);
const locality = check<string>(
  (v) => isString(v) && isLocality(v),
  'must be region, region/zone or region/zone/subzone, each part a label value',
);
const entrySpecFields = {
  ports: z.record(z.string(), port).optional(),
  labels: labels.optional(),
  network: check<string>(
    (v) => isString(v) && isNetworkName(v),
    "must be a network name: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
  ).optional(),
  locality: locality.optional(),
  weight: check<number>(
    (v) => isInteger(v, 0, 2 ** 32 - 1),
    'must be a whole number 0-4294967295',
  ).optional(),
  serviceAccount: check<string>(
    (v) => isString(v) && isDns1123Subdomain(v),
    `must be ${SUBDOMAIN_RULE}`,
  ).optional(),
};

const probe = z
  .strictObject({
    initialDelaySeconds: seconds.optional(),
    timeoutSeconds: seconds.optional(),
    periodSeconds: seconds.optional(),
    successThreshold: seconds.optional(),
    failureThreshold: seconds.optional(),
    httpGet: z
      .strictObject({
        path: check<string>(
          (v) => isString(v) && v.startsWith('/'),
          "must be a path starting with '/'",
        ).optional(),
        port,
        host: text.optional(),
        scheme: z.enum(['HTTP', 'HTTPS']).optional(),
        httpHeaders: z.array(z.strictObject({ name: text, value: text })).optional(),
      })
      .optional(),
    tcpSocket: z.strictObject({ host: text.optional(), port }).optional(),
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

// Server-set fields (uid, generation, resourceVersion, ...) are accepted and dropped, so the
// output of `get -o yaml` can be applied again; the registry sets its own.
const metadataFields = {
  name,
  namespace: namespace.optional(),
  labels: labels.optional(),
  annotations: annotations.optional(),
};

const groupSchema = z.object({
  metadata: z.looseObject(metadataFields),
  spec: z.strictObject({
    metadata: z
      .strictObject({ labels: labels.optional(), annotations: annotations.optional() })
      .optional(),
    template: z.strictObject({
      // Each entry takes the address its VM connects with; Istio refuses one here too.
      address: check<never>(
        () => false,
        'must not be set in a WorkloadGroup template: each VM registers its own address',
      ).optional(),
      ...entrySpecFields,
    }),
    probe: probe.optional(),
  }),
});

const condition = z.looseObject({
  type: text,
  status: z.enum(['True', 'False', 'Unknown']),
  reason: text.optional(),
  message: text.optional(),
  lastProbeTime: text.optional(),
  lastTransitionTime: text.optional(),
});

const entrySchema = z.object({
  metadata: z.looseObject(metadataFields),
  spec: z.strictObject({ address: address.optional(), ...entrySpecFields }),
  status: z.looseObject({ conditions: z.array(condition).optional() }).optional(),
});

/** Parses every document of a YAML or JSON input; throws InvalidDocumentsError naming each problem. */
export function parseIstioDocuments(input: string, options: ParseOptions = {}): IstioDocument[] {
  const problems: string[] = [];
  const documents: IstioDocument[] = [];
  const raws = readDocuments(input);
  if (raws.length === 0) problems.push('no documents in the input');
  const seen = new Map<string, string>();
  for (const { raw, label, index, syntaxError } of raws) {
    if (syntaxError !== undefined) {
      problems.push(`${label}: not valid YAML or JSON: ${syntaxError}`);
      continue;
    }
    const parsed = parseDocument(raw, label, index, options, problems);
    if (!parsed) continue;
    const meta = parsed.kind === 'WorkloadGroup' ? parsed.group.metadata : parsed.entry.metadata;
    const key = `${parsed.kind}/${meta.namespace}/${meta.name}`;
    const first = seen.get(key);
    if (first) problems.push(`${describeDocument(label, raw)}: duplicates ${first}`);
    else seen.set(key, label);
    documents.push(parsed);
  }
  if (problems.length > 0) throw new InvalidDocumentsError(problems);
  return documents;
}

interface RawDocument {
  raw: unknown;
  /** `document 2`, or `document 1 item 3` inside a List. */
  label: string;
  /** Position among the objects of the input, from 1. */
  index: number;
  /** Why the document is not YAML or JSON at all. */
  syntaxError?: string;
}

function readDocuments(input: string): RawDocument[] {
  const result: RawDocument[] = [];
  parseAllDocuments(input).forEach((doc, at) => {
    const label = `document ${at + 1}`;
    const error = doc.errors[0];
    if (error) {
      // The first line carries the message and the position in the whole input.
      const syntaxError = (error.message.split('\n')[0] ?? '').replace(/:$/, '');
      result.push({ raw: undefined, label, index: result.length + 1, syntaxError });
      return;
    }
    const raw: unknown = doc.toJS();
    // An empty document (a trailing '---') is not an object to apply.
    if (raw === null || raw === undefined) return;
    // `get -o json|yaml` prints a List; accept it back, as kubectl does.
    if (isRecord(raw) && raw.kind === 'List' && Array.isArray(raw.items)) {
      raw.items.forEach((item: unknown, i: number) => {
        result.push({ raw: item, label: `${label} item ${i + 1}`, index: result.length + 1 });
      });
      return;
    }
    result.push({ raw, label, index: result.length + 1 });
  });
  return result;
}

function parseDocument(
  raw: unknown,
  label: string,
  index: number,
  options: ParseOptions,
  problems: string[],
): IstioDocument | undefined {
  const where = describeDocument(label, raw);
  if (!isRecord(raw)) {
    problems.push(
      `${where}: must be a WorkloadGroup or WorkloadEntry object, got ${showValue(raw)}`,
    );
    return undefined;
  }
  const { kind, apiVersion } = raw;
  if (kind !== 'WorkloadGroup' && kind !== 'WorkloadEntry') {
    problems.push(`${where}: kind: must be WorkloadGroup or WorkloadEntry, got ${showValue(kind)}`);
    return undefined;
  }
  if (!(ACCEPTED_API_VERSIONS as readonly unknown[]).includes(apiVersion)) {
    problems.push(
      `${where}: apiVersion: must be one of ${ACCEPTED_API_VERSIONS.join(', ')}, got ${showValue(apiVersion)}`,
    );
    return undefined;
  }
  const body = { metadata: raw.metadata, spec: raw.spec, status: raw.status };
  const schema = kind === 'WorkloadGroup' ? groupSchema : entrySchema;
  const parsed = schema.safeParse(body);
  const refusals = kind === 'WorkloadEntry' ? refuseAutoRegistered(body.metadata) : [];
  if (!parsed.success || refusals.length > 0) {
    for (const issue of parsed.error?.issues ?? []) {
      for (const line of describeIssue(issue, body)) problems.push(`${where}: ${line}`);
    }
    for (const line of refusals) problems.push(`${where}: ${line}`);
    return undefined;
  }
  const meta = parsed.data.metadata;
  const ns = meta.namespace ?? options.namespace ?? DEFAULT_NAMESPACE;
  if (options.namespace !== undefined && ns !== options.namespace) {
    problems.push(
      `${where}: metadata.namespace: is '${ns}' but the command names namespace '${options.namespace}'; pass -n ${ns} or remove the namespace from the document`,
    );
    return undefined;
  }
  // The three accepted versions have the same schema for these kinds: store the current one.
  const metadata = { name: meta.name, namespace: ns, ...pick(meta, 'labels', 'annotations') };
  if (kind === 'WorkloadGroup') {
    const spec = (parsed.data as z.infer<typeof groupSchema>).spec;
    const group: WorkloadGroup = {
      apiVersion: ISTIO_API_VERSION,
      kind,
      metadata,
      spec: { ...pick(spec, 'metadata', 'probe'), template: spec.template },
    };
    return { index, kind, group };
  }
  const data = parsed.data as z.infer<typeof entrySchema>;
  const entry: WorkloadEntry = { apiVersion: ISTIO_API_VERSION, kind, metadata, spec: data.spec };
  if (data.status?.conditions) entry.status = { conditions: data.status.conditions as Condition[] };
  return { index, kind, entry };
}

/**
 * An entry that claims a group is one the registrar created and the sweeper may delete; an
 * operator writing one would forge that. Checked apart from the schema so it is reported even
 * when other fields of the document are wrong too.
 */
function refuseAutoRegistered(metadata: unknown): string[] {
  const notes = isRecord(metadata) ? metadata.annotations : undefined;
  const group = isRecord(notes) ? notes[ANNOTATIONS.autoRegistrationGroup] : undefined;
  if (group === undefined) return [];
  const path = formatPath(['metadata', 'annotations', ANNOTATIONS.autoRegistrationGroup]);
  return [
    `${path}: only auto-registration sets this (entries of a group are created when its VMs connect); remove the annotation to add a hand-made entry, got ${showValue(group)}`,
  ];
}

/** `document 2 (WorkloadGroup web)`: where a problem is, in words the operator can find. */
function describeDocument(label: string, raw: unknown): string {
  if (!isRecord(raw)) return label;
  const kind = typeof raw.kind === 'string' ? raw.kind : 'unknown kind';
  const meta = raw.metadata;
  const objectName = isRecord(meta) && typeof meta.name === 'string' ? meta.name : '<unnamed>';
  return `${label} (${kind} ${objectName})`;
}

function describeIssue(issue: core.$ZodIssue, body: unknown): string[] {
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

/** `spec.template.ports.http`, `metadata.labels["app.kubernetes.io/name"]`, `command[0]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(String(segment)))
      out += `${out ? '.' : ''}${String(segment)}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out || '(document)';
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let at: unknown = root;
  for (const segment of path) {
    if (!isRecord(at) && !Array.isArray(at)) return undefined;
    at = (at as Record<PropertyKey, unknown>)[segment];
  }
  return at;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function pick<T extends object, K extends keyof T>(value: T, ...keys: K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (value[key] !== undefined) out[key] = value[key];
  return out;
}
