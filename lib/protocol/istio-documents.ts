import type * as z from 'zod';
import {
  ACCEPTED_API_VERSIONS,
  type Condition,
  DEFAULT_NAMESPACE,
  ISTIO_API_VERSION,
  type WorkloadEntry,
  type WorkloadGroup,
} from '../domain/model.ts';
import { forgedEntryState, forgedGroupState } from '../domain/registrar-state.ts';
import type { DocumentSizeLimits, SizeRefusal } from './document-size-limits.ts';
import {
  describeDocument,
  describeIssue,
  InvalidDocumentsError,
  isRecord,
  showValue,
} from './istio-document-problems.ts';
import { readDocuments } from './istio-document-reader.ts';
import { workloadEntrySchema } from './istio-workload-entry-schema.ts';
import { workloadGroupSchema } from './istio-workload-group-schema.ts';

export { formatPath, InvalidDocumentsError, showValue } from './istio-document-problems.ts';

/**
 * WorkloadGroup and hand-made WorkloadEntry documents, as an operator writes them for Istio
 * (YAML or JSON, several per input), validated before anything is written: one invalid
 * document refuses the whole input, so an apply never leaves half a change behind.
 */

/** Where a document without `metadata.namespace` goes (in the domain model: the CLI reads it without this module). */
export { DEFAULT_NAMESPACE };

export type IstioDocument =
  | { index: number; kind: 'WorkloadGroup'; group: WorkloadGroup }
  | { index: number; kind: 'WorkloadEntry'; entry: WorkloadEntry };

export interface ParseOptions {
  /** The namespace asked for on the command line; documents naming another are refused. */
  namespace?: string;
  /** What an object may weigh where it is stored (lib/store/catalog-item-limits.ts). */
  limits: DocumentSizeLimits;
}

/** Parses every document of a YAML or JSON input; throws InvalidDocumentsError naming each problem. */
export function parseIstioDocuments(input: string, options: ParseOptions): IstioDocument[] {
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
  const schema = kind === 'WorkloadGroup' ? workloadGroupSchema : workloadEntrySchema;
  const parsed = schema.safeParse(body);
  // Checked apart from the schema, so a forgery is reported even when other fields are wrong.
  const forged = kind === 'WorkloadEntry' ? forgedEntryState(body) : forgedGroupState(body);
  const refusals = forged.map((forgery) => forgery.problem);
  if (!parsed.success || refusals.length > 0) {
    for (const issue of parsed.error?.issues ?? []) {
      for (const line of describeIssue(issue, body)) problems.push(`${where}: ${line}`);
    }
    for (const line of refusals) problems.push(`${where}: ${line}`);
    return undefined;
  }
  // Fields given as "" are unset (emptyIsUnset): leave no key behind for them.
  const valid = definedOnly(parsed.data);
  const meta = valid.metadata;
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
    const spec = (valid as z.infer<typeof workloadGroupSchema>).spec;
    const group: WorkloadGroup = {
      apiVersion: ISTIO_API_VERSION,
      kind,
      metadata,
      spec: { ...pick(spec, 'metadata', 'probe'), template: spec.template },
    };
    return fits(options.limits.groupSizeRefusal(group), where, problems)
      ? { index, kind, group }
      : undefined;
  }
  const data = valid as z.infer<typeof workloadEntrySchema>;
  const entry: WorkloadEntry = { apiVersion: ISTIO_API_VERSION, kind, metadata, spec: data.spec };
  if (data.status?.conditions) entry.status = { conditions: data.status.conditions as Condition[] };
  return fits(options.limits.entrySizeRefusal(entry), where, problems)
    ? { index, kind, entry }
    : undefined;
}

/**
 * An object over the store's limit (one DynamoDB item) is refused here, with the rest of the
 * input, so that `apply` writes none of it (the catalog checks again before its put).
 */
function fits(refusal: SizeRefusal | undefined, where: string, problems: string[]): boolean {
  if (refusal) problems.push(`${where}: ${refusal.message}`);
  return refusal === undefined;
}

/** A copy without `undefined` members, at any depth (the parsed document is plain data). */
function definedOnly<T>(value: T): T {
  if (Array.isArray(value)) return value.map(definedOnly) as T;
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value).filter(([, member]) => member !== undefined);
  return Object.fromEntries(entries.map(([key, member]) => [key, definedOnly(member)])) as T;
}

function pick<T extends object, K extends keyof T>(value: T, ...keys: K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (value[key] !== undefined) out[key] = value[key];
  return out;
}
