import type { Problem } from './desired.ts';
import type { RefusedEndpoint } from './endpoint-ranges.ts';
import type { Kind, ManagedKind } from './kinds.ts';

export const TARGETS = ['istio', 'linkerd', 'endpointslices'] as const;
/** What the projector writes: istio WorkloadEntries, linkerd ExternalWorkloads, EndpointSlices. */
export type Target = (typeof TARGETS)[number];

export const TARGET_KINDS: Readonly<Record<Target, ManagedKind>> = {
  istio: 'WorkloadEntry',
  linkerd: 'ExternalWorkload',
  endpointslices: 'EndpointSlice',
};

/**
 * Which namespaces a full reconcile read, and where it learnt them from. Part of the report
 * (`namespaces`), filled in by registry-read.ts, which imports it from here.
 */
export interface NamespaceCoverage {
  /** Namespaces whose entries were read (one Query each). */
  read: number;
  /** False: the index predates some namespaces, so the cluster's were read as well. */
  indexComplete: boolean;
  /** Namespaces read only because the cluster holds our objects there (index incomplete). */
  fromCluster: string[];
}

export type ChangeAction = 'created' | 'updated' | 'status-updated' | 'deleted';

export interface Change {
  kind: ManagedKind;
  action: ChangeAction;
  namespace: string;
  name: string;
}

export interface ProjectionError {
  target: Target | 'registry';
  kind?: Kind;
  namespace?: string;
  name?: string;
  message: string;
}

/** What one reconcile did (or, in a dry run, would do). */
export interface ProjectionReport {
  dryRun: boolean;
  changes: Change[];
  /** Writes refused with 409 (someone wrote first): each was re-read and retried. */
  conflicts: number;
  /** Objects with a desired name that exist without our managed-by label: left alone. */
  unmanaged: { kind: ManagedKind; namespace: string; name: string }[];
  /** Entries that could not be projected (configuration missing), with the reason. */
  problems: Problem[];
  /**
   * Entries whose address the projector refuses to write (in the cluster's pod or Service
   * ranges, outside their namespace's ranges, not reachable): nothing of theirs is in the
   * cluster after the run, and an object written for them before is deleted.
   */
  refused: RefusedEndpoint[];
  /** Requests that failed for another reason (CRD not installed, 422, 5xx, registry read). */
  errors: ProjectionError[];
  /** A full reconcile: the namespaces it read, and whether the namespace index was complete. */
  namespaces?: NamespaceCoverage;
  durationMs: number;
}

export function emptyReport(dryRun: boolean): ProjectionReport {
  return {
    dryRun,
    changes: [],
    conflicts: 0,
    unmanaged: [],
    problems: [],
    refused: [],
    errors: [],
    durationMs: 0,
  };
}

/** Changes counted per kind and action, for metrics: `{ WorkloadEntry: { created: 2 } }`. */
export function countChanges(
  report: ProjectionReport,
): Partial<Record<ManagedKind, Partial<Record<ChangeAction, number>>>> {
  const counts: Partial<Record<ManagedKind, Partial<Record<ChangeAction, number>>>> = {};
  for (const change of report.changes) {
    const perKind = counts[change.kind] ?? {};
    perKind[change.action] = (perKind[change.action] ?? 0) + 1;
    counts[change.kind] = perKind;
  }
  return counts;
}

/** One line per change, as `registrar project` prints them: `created WorkloadEntry ns/name`. */
export function describeReport(report: ProjectionReport): string {
  const prefix = report.dryRun ? 'would have ' : '';
  const lines = report.changes.map(
    (c) => `${prefix}${c.action} ${c.kind} ${c.namespace}/${c.name}`,
  );
  for (const u of report.unmanaged) {
    lines.push(
      `skipped ${u.kind} ${u.namespace}/${u.name}: exists without app.kubernetes.io/managed-by=workload-registrar, left alone`,
    );
  }
  for (const p of report.problems)
    lines.push(`not projected ${p.kind} ${p.namespace}/${p.name}: ${p.message}`);
  for (const r of report.refused) lines.push(`refused ${r.namespace}/${r.name}: ${r.message}`);
  for (const e of report.errors) {
    const where = [e.kind, e.namespace && e.name ? `${e.namespace}/${e.name}` : e.namespace]
      .filter(Boolean)
      .join(' ');
    lines.push(`error (${e.target}${where ? ` ${where}` : ''}): ${e.message}`);
  }
  lines.push(
    `${report.changes.length} change(s), ${report.conflicts} conflict(s), ${report.errors.length} error(s) in ${Math.round(report.durationMs)} ms`,
  );
  return `${lines.join('\n')}\n`;
}
