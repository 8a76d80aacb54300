import type { ProjectionReport } from '../../lib/projection/report.ts';

/** Where the local runtime projects: named in every line about it. */
export interface ProjectionTarget {
  cluster: string;
  server: string;
}

export interface ProjectionLog {
  info(message: string, fields: Record<string, unknown>): void;
  warn(message: string, fields: Record<string, unknown>): void;
}

export interface ProjectionStatus {
  /** A reconcile that ran: its changes, and its errors as one failure. */
  report(report: ProjectionReport): void;
  /** A reconcile that threw. */
  failed(error: unknown): void;
}

/**
 * Turns each reconcile of the local projector loop into log lines a person can follow. The loop
 * runs every 10 s: a cluster that stays unreachable is told once (`projection failing`, with
 * the cluster and the cause) and again only when the cause changes, and its return once
 * (`projection recovered`). An entry that cannot be projected is told when it starts to be a
 * problem, not on every run.
 */
export function projectionStatus(target: ProjectionTarget, log: ProjectionLog): ProjectionStatus {
  let failing: string | undefined;
  let problems = new Set<string>();
  const where = { cluster: target.cluster, server: target.server };

  const fail = (cause: string) => {
    if (cause !== failing) log.warn('projection failing', { ...where, cause });
    failing = cause;
  };

  return {
    report(report) {
      for (const change of report.changes) log.info('projected', { ...where, ...change });
      const current = new Set<string>();
      for (const problem of report.problems) {
        const key = `${problem.kind} ${problem.namespace}/${problem.name}: ${problem.message}`;
        current.add(key);
        if (!problems.has(key)) {
          log.warn('entry not projected', {
            ...where,
            kind: problem.kind,
            entry: `${problem.namespace}/${problem.name}`,
            reason: problem.message,
          });
        }
      }
      for (const refused of report.refused) {
        const key = `refused ${refused.namespace}/${refused.name}: ${refused.message}`;
        current.add(key);
        if (!problems.has(key)) {
          log.warn('endpoint refused', {
            ...where,
            entry: `${refused.namespace}/${refused.name}`,
            address: refused.address,
            reason: refused.message,
          });
        }
      }
      problems = current;
      if (report.errors.length > 0) {
        const distinct = [...new Set(report.errors.map((error) => error.message))];
        const more = distinct.length > 1 ? ` (and ${distinct.length - 1} other error(s))` : '';
        fail(`${distinct[0]}${more}`);
      } else if (failing !== undefined) {
        failing = undefined;
        log.info('projection recovered', where);
      }
    },
    failed(error) {
      fail(error instanceof Error ? error.message : String(error));
    },
  };
}
