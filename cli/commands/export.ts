import { type Command, Option } from 'commander';
import { stringify } from 'yaml';
import { type EntryRecord, renderWorkloadEntry } from '../../lib/domain/entry-record.ts';
import { ANNOTATIONS } from '../../lib/domain/model.ts';
import { asList } from '../../lib/presentation/output.ts';
import { desiredWorkloadEntries } from '../../lib/projection/desired-istio.ts';
import { desiredExternalWorkloads } from '../../lib/projection/desired-linkerd.ts';
import type { KubeObject } from '../../lib/projection/objects.ts';
import { servingState } from '../../lib/projection/serving.ts';
import { exportWarnings } from '../export-warnings.ts';
import {
  type LabelSelector,
  matchesSelector,
  parseLabelSelector,
  SELECTOR_HELP,
} from '../label-selector.ts';
import { printsObjects, serializeObject } from '../object-output.ts';
import { type OutputSpec, outputOption, TABLE } from '../output-option.ts';
import { type CommandRegistration, UsageError } from './context.ts';
import { namespaceOf, namespaceOption } from './resources.ts';

interface ExportOptions {
  format: 'istio' | 'linkerd';
  output: OutputSpec;
  namespace?: string;
  allNamespaces?: boolean;
  selector?: LabelSelector;
  routableOnly?: boolean;
}

/**
 * `registrar export --format istio|linkerd`: the registry as the Kubernetes objects the
 * projector would write, as multi-document YAML for GitOps (`| kubectl apply -f -`). Offline:
 * no cluster is read, so WorkloadEntries carry no ownerReference (the group's uid in a cluster
 * is unknown here, and a wrong one would get them garbage-collected).
 */
export const registerExport: CommandRegistration = (program, context) => {
  program
    .command('export')
    .description('print the registry as Kubernetes objects (YAML) for kubectl apply -f - or GitOps')
    .addOption(
      new Option('--format <format>', 'istio: WorkloadEntries; linkerd: ExternalWorkloads')
        .choices(['istio', 'linkerd'])
        .makeOptionMandatory(),
    )
    .addOption(namespaceOption())
    .option('-A, --all-namespaces', 'export every namespace')
    .addOption(new Option('-l, --selector <selector>', SELECTOR_HELP).argParser(parseLabelSelector))
    .addOption(
      // Multi-document YAML by default (what GitOps repositories hold); -o yaml|json a v1
      // List, as kubectl get prints several objects; -o name one kind/name a line.
      outputOption(['name', 'json', 'yaml', 'jsonpath', 'go-template']).default(
        TABLE,
        'multi-document YAML',
      ),
    )
    .option(
      '--routable-only',
      'istio: leave out entries the mesh sends no traffic now (with kubectl apply --prune, that deletes them from the cluster)',
    )
    .action(async (options: ExportOptions, command: Command) => {
      if (options.namespace !== undefined && options.allNamespaces) {
        throw new UsageError('use either -n <namespace> or -A, not both');
      }
      const namespace = options.allNamespaces ? undefined : namespaceOf(options);
      const { catalog } = await context.stores(command);
      const selector = options.selector ?? [];
      const selected = (await catalog.listEntries(namespace)).filter((record) =>
        matchesSelector(selector, renderWorkloadEntry(record).metadata.labels),
      );
      // A static WorkloadEntry is always ready to istiod, and kubectl apply cannot carry the
      // live health that says otherwise: a dead VM exported as one would get traffic again. So
      // it goes out marked (forApply), which istiod's routing rule reads as not ready. Leaving
      // it out instead would make `kubectl apply --prune` delete it from the cluster while the
      // registrar still keeps it for the grace: a namespace whose VMs are all down would be
      // emptied. Out only when asked (--routable-only, for a pipeline that does not prune).
      const unroutable = selected.filter((record) => !servingState(record).ready);
      const leftOut = options.format === 'istio' && options.routableOnly ? unroutable : [];
      // A Set, not Array.includes: an export of 100,000 entries with many down stays linear.
      const dropped = new Set(leftOut);
      const entries = selected.filter((record) => !dropped.has(record));
      const groups = options.format === 'istio' ? [] : await catalog.listGroups(namespace);
      const desired =
        options.format === 'istio'
          ? desiredWorkloadEntries(entries, [])
          : desiredExternalWorkloads(entries, groups);
      const keptOut = new Set(unroutable.map((record) => refKey(record.entry.metadata)));
      const objects =
        options.format === 'istio'
          ? desired.objects.map((object) => forApply(object, keptOut.has(refKey(object.metadata))))
          : desired.objects;
      const { output } = options;
      if (output.format === 'name') {
        context.out(
          objects
            .map((object) => `${object.kind.toLowerCase()}/${object.metadata.name}\n`)
            .join(''),
        );
      } else if (printsObjects(output)) {
        context.out(serializeObject(output, asList(objects)));
      } else {
        context.out(objects.map((object) => `---\n${stringify(object)}`).join(''));
      }
      for (const line of exportWarnings(desired.problems, entries, groups)) {
        context.io.stderr.write(`${line}\n`);
      }
      const them = (n: number) => (n === 1 ? 'it' : 'them');
      if (leftOut.length > 0) {
        context.io.stderr.write(
          `note: ${count(leftOut.length, 'entry', 'entries')} left out because the mesh sends ${them(leftOut.length)} no traffic now (disconnected, unhealthy or cordoned: ${sample(leftOut)}); kubectl apply --prune would delete ${them(leftOut.length)} from the cluster; without --routable-only ${leftOut.length === 1 ? 'it is' : 'they are'} exported marked so istiod keeps ${them(leftOut.length)} out\n`,
        );
      }
      const marked = options.format === 'istio' && !options.routableOnly ? unroutable : [];
      if (marked.length > 0) {
        context.io.stderr.write(
          `note: ${count(marked.length, 'entry', 'entries')} exported out of traffic (disconnected, unhealthy or cordoned: ${sample(marked)}), marked with ${ANNOTATIONS.healthChecksEnabled} and no Healthy condition, so istiod sends ${them(marked.length)} nothing; --routable-only leaves ${them(marked.length)} out\n`,
        );
      }
      const withoutHealth = desired.objects.filter(
        (object) => asksForHealth(object) && !keptOut.has(refKey(object.metadata)),
      ).length;
      if (withoutHealth > 0) {
        context.io.stderr.write(
          `note: ${count(withoutHealth, 'entry', 'entries')} exported without health (${ANNOTATIONS.healthChecksEnabled} and its Healthy condition): health is live state, and kubectl apply cannot write a WorkloadEntry's status, without which istiod would never send it traffic; for live health run the projector (docs/kubernetes.md)\n`,
        );
      }
    });
};

function asksForHealth(object: KubeObject): boolean {
  return object.metadata.annotations?.[ANNOTATIONS.healthChecksEnabled] === 'true';
}

/**
 * A WorkloadEntry as `kubectl apply` can carry it. The API server drops `status` on writes
 * to the object (WorkloadEntry has a status subresource), and istiod treats an entry that
 * asks for health checks but has no `Healthy: True` condition as not ready: applied as the
 * projector writes it, every VM would lose its traffic. So a routable entry goes out without
 * either, and istiod sends it traffic as it does any static WorkloadEntry. An unroutable one
 * keeps the annotation: without its status, istiod keeps it out.
 */
function forApply(object: KubeObject, unroutable: boolean): KubeObject {
  const { status: _status, ...rest } = object;
  const annotations = { ...(object.metadata.annotations ?? {}) };
  if (unroutable) annotations[ANNOTATIONS.healthChecksEnabled] = 'true';
  else delete annotations[ANNOTATIONS.healthChecksEnabled];
  const { annotations: _annotations, ...metadata } = object.metadata;
  return {
    ...rest,
    metadata: Object.keys(annotations).length > 0 ? { ...metadata, annotations } : metadata,
  };
}

function refKey(metadata: { namespace?: string; name: string }): string {
  return `${metadata.namespace ?? ''}/${metadata.name}`;
}

function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Up to three names, then how many more: enough to find them, short enough to read. */
function sample(records: readonly EntryRecord[]): string {
  const names = records.slice(0, 3).map((r) => refKey(r.entry.metadata));
  const more = records.length - names.length;
  return more > 0 ? `${names.join(', ')} and ${more} more` : names.join(', ');
}
