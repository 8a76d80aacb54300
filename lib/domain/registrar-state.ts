import { formatPath, showValue } from './field-path.ts';
import { ANNOTATIONS, HEALTHY_CONDITION } from './model.ts';

/**
 * State only the registrar writes: the system annotations of an auto-registered entry and its
 * `Healthy` condition. An operator's document that sets them would forge that state: a
 * hand-made entry that looks connected, healthy, or owned by a group (which the sweeper would
 * then delete), or a group whose entries claim another controller. Refused by `apply` (and by
 * the catalog before it writes), with the field and the value.
 *
 * The documents are read as they came (before or after the schema), so a forgery is reported
 * together with the document's other problems.
 */

/** What each system annotation records, in the words of the refusal. */
const RECORDS: Record<(typeof ANNOTATIONS)[keyof typeof ANNOTATIONS], string> = {
  [ANNOTATIONS.autoRegistrationGroup]: 'entries of a group are created when its VMs connect',
  [ANNOTATIONS.workloadController]: 'the control plane instance that holds a connected VM',
  [ANNOTATIONS.connectedAt]: "when a VM's agent connected",
  [ANNOTATIONS.disconnectedAt]: "when a VM's last connection went away",
  [ANNOTATIONS.healthChecksEnabled]:
    'on entries of a group with a probe, whose agents report health; a hand-made entry has no agent, so it would never become healthy',
};

/** One forged field: its path, and the whole refusal (`<path>: ...`). */
export interface Forgery {
  field: string;
  problem: string;
}

interface Document {
  metadata?: unknown;
  spec?: unknown;
  status?: unknown;
}

/** `metadata.annotations[...]` problems and a `Healthy` condition, for a hand-made entry. */
export function forgedEntryState(entry: Document): Forgery[] {
  const problems: Forgery[] = [];
  for (const [key, value] of systemAnnotations(at(entry.metadata, 'annotations'))) {
    const path = formatPath(['metadata', 'annotations', key]);
    // The group annotation's refusal reads as it always has: it is the one operators meet.
    const only =
      key === ANNOTATIONS.autoRegistrationGroup ? 'only auto-registration' : 'only the registrar';
    problems.push({
      field: path,
      problem: `${path}: ${only} sets this (${RECORDS[key]}); remove the annotation to add a hand-made entry, got ${showValue(value)}`,
    });
  }
  const conditions = at(entry.status, 'conditions');
  if (Array.isArray(conditions)) {
    conditions.forEach((condition: unknown, index) => {
      const type = at(condition, 'type');
      if (type !== HEALTHY_CONDITION) return;
      const path = formatPath(['status', 'conditions', index, 'type']);
      problems.push({
        field: path,
        problem: `${path}: only the registrar sets the ${HEALTHY_CONDITION} condition (from the health reports of a connected VM's agent); remove it to add a hand-made entry, got ${showValue(type)}`,
      });
    });
  }
  return problems;
}

/**
 * `spec.metadata.annotations` system keys of a group. Its entries would never carry them
 * (buildEntry drops them and the registrar writes its own), so setting one is a mistake to
 * report, not a value to drop silently.
 */
export function forgedGroupState(group: Document): Forgery[] {
  const annotations = at(at(group.spec, 'metadata'), 'annotations');
  return systemAnnotations(annotations).map(([key, value]) => {
    const path = formatPath(['spec', 'metadata', 'annotations', key]);
    return {
      field: path,
      problem: `${path}: only the registrar sets this on the entries it creates (${RECORDS[key]}); remove the annotation from the group, got ${showValue(value)}`,
    };
  });
}

type SystemKey = keyof typeof RECORDS;

function systemAnnotations(annotations: unknown): [SystemKey, unknown][] {
  if (!isObject(annotations)) return [];
  return Object.entries(annotations).filter((pair): pair is [SystemKey, unknown] =>
    Object.hasOwn(RECORDS, pair[0]),
  );
}

function at(value: unknown, key: string): unknown {
  return isObject(value) ? value[key] : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
