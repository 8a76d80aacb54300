import { formatDuration } from '../lib/domain/duration.ts';
import type { EntryRecord } from '../lib/domain/entry-record.ts';
import type { SweepResult, SweepStore } from '../lib/registration/sweep.ts';
import type { DeparturesInGrace } from '../lib/registration/sweep-store.ts';
import type { CliContext } from './commands/context.ts';
import { QUALIFIED } from './commands/resources.ts';
import { printsObjects, serializeObject } from './object-output.ts';
import type { OutputFormatName, OutputSpec } from './output-option.ts';
import { countOf } from './plural.ts';

/** `registrar sweep -o`: each entry's name, or the whole run as an object. */
export const SWEEP_FORMATS = [
  'name',
  'json',
  'yaml',
  'jsonpath',
  'go-template',
] as const satisfies readonly OutputFormatName[];

/** What `registrar sweep` reports of one run, in every format. */
export interface SweepReport {
  result: SweepResult;
  /** `-n`: the one namespace swept; undefined, every one. */
  namespace: string | undefined;
  /** Departed entries still in their grace (every namespace; not counted under `-n`). */
  waiting: DeparturesInGrace | undefined;
  policy: { gracePeriodMs: number; maxConnectionAgeMs: number; source: string };
  now: number;
}

/**
 * The sweep store seen through one namespace (`registrar sweep -n NS`): only its departures
 * and its stale entries are read, so only they can be deleted. Every other method, fail
 * static's included, is the store's own.
 */
export function namespaceScoped<T extends SweepStore>(store: T, namespace: string): T {
  const sweepNamespaces: SweepStore['sweepNamespaces'] = async (counted) =>
    (await store.sweepNamespaces(counted)).filter((name) => name === namespace);
  const sweepCandidates: SweepStore['sweepCandidates'] = (...args) =>
    inNamespace(store.sweepCandidates(...args), namespace);
  return new Proxy(store, {
    get(target, property) {
      if (property === 'sweepNamespaces') return sweepNamespaces;
      if (property === 'sweepCandidates') return sweepCandidates;
      const value = Reflect.get(target, property, target);
      // Bound to the store itself: its methods use private fields a proxy does not have.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function* inNamespace(
  records: AsyncIterable<EntryRecord>,
  namespace: string,
): AsyncIterable<EntryRecord> {
  for await (const record of records) {
    if (record.entry.metadata.namespace === namespace) yield record;
  }
}

/**
 * Prints a run: by default a line per entry and the summary, both on stdout (the summary is
 * the command's result, also when nothing was due); `-o name` only the entries'
 * `TYPE/NAME` on stdout and the summary on stderr, for scripts; json, yaml and the templates
 * the run as one object.
 */
export function printSweep(context: CliContext, output: OutputSpec, report: SweepReport): void {
  const { result } = report;
  if (printsObjects(output)) {
    context.out(serializeObject(output, sweepView(report)));
    return;
  }
  if (output.format === 'name') {
    for (const entry of result.deleted) context.out(`${QUALIFIED.WorkloadEntry}/${entry.name}\n`);
    context.io.stderr.write(`${summaryLine(report)}\n`);
    return;
  }
  const verb = result.dryRun ? 'would be deleted' : 'deleted';
  for (const entry of result.deleted) {
    context.out(
      `${QUALIFIED.WorkloadEntry} "${entry.name}" ${verb} (namespace ${entry.namespace}, ${entry.reason})\n`,
    );
  }
  context.out(`${summaryLine(report)}\n`);
}

/** "0 would be deleted; 1 candidate read; ...; grace period 5m, ... (the registrar's, ...)". */
function summaryLine({ result, namespace, waiting, policy, now }: SweepReport): string {
  const verb = result.dryRun ? 'would be deleted' : 'deleted';
  return [
    `${result.deleted.length} ${verb}${namespace === undefined ? '' : ` in namespace ${namespace}`}`,
    `${countOf(result.candidatesRead, 'candidate')} read`,
    result.conflicts > 0 ? `${result.conflicts} kept: reconnected after they were read` : '',
    heldSummary(result),
    waiting ? inGraceSummary(waiting, policy.gracePeriodMs, now) : '',
    `grace period ${formatDuration(policy.gracePeriodMs)}, max connection age ${formatDuration(policy.maxConnectionAgeMs)} (${policy.source})`,
  ]
    .filter(Boolean)
    .join('; ');
}

function sweepView({ result, namespace, waiting, policy, now }: SweepReport) {
  const total = (counts: Record<string, number>) =>
    Object.values(counts).reduce((sum, value) => sum + value, 0);
  return {
    dryRun: result.dryRun,
    ...(namespace === undefined ? {} : { namespace }),
    deleted: result.deleted,
    candidatesRead: result.candidatesRead,
    conflicts: result.conflicts,
    held: total(result.held),
    slowed: total(result.slowed),
    ...(result.disruption ? { mode: result.disruption.mode } : {}),
    ...(waiting
      ? {
          inGrace: {
            count: waiting.count,
            more: waiting.more,
            ...(waiting.firstDisconnectedAt === undefined
              ? {}
              : {
                  firstDueAt: new Date(
                    Math.max(now, waiting.firstDisconnectedAt + policy.gracePeriodMs),
                  ).toISOString(),
                }),
          },
        }
      : {}),
    policy: {
      gracePeriod: formatDuration(policy.gracePeriodMs),
      maxConnectionAge: formatDuration(policy.maxConnectionAgeMs),
      source: policy.source,
    },
  };
}

/**
 * "2 departed entries within their grace period, the first due in 4m10s": why a sweep left
 * entries that are disconnected, so "0 deleted" is not read as "nothing left".
 */
export function inGraceSummary(
  waiting: DeparturesInGrace,
  gracePeriodMs: number,
  now: number,
): string {
  if (waiting.count === 0) return '';
  const count = `${waiting.count}${waiting.more ? '+' : ''}`;
  const noun = waiting.count === 1 && !waiting.more ? 'departed entry' : 'departed entries';
  const their = waiting.count === 1 && !waiting.more ? 'its' : 'their';
  const first =
    waiting.firstDisconnectedAt === undefined
      ? ''
      : `, the first due in ${formatDuration(Math.max(1000, Math.ceil((waiting.firstDisconnectedAt + gracePeriodMs - now) / 1000) * 1000))}`;
  return `${count} ${noun} within ${their} grace period${first}`;
}

function heldSummary({ held, slowed, disruption }: SweepResult): string {
  const count = (counts: Record<string, number>) =>
    Object.values(counts).reduce((sum, value) => sum + value, 0);
  const parts = [];
  if (count(held) > 0) {
    parts.push(`${count(held)} held (${disruption?.mode}; see registrar sweep status)`);
  }
  if (count(slowed) > 0) parts.push(`${count(slowed)} deferred by a disrupted cell's slower rate`);
  return parts.join('; ');
}
