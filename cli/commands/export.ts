import { type Command, Option } from 'commander';
import { stringify } from 'yaml';
import { renderWorkloadEntry } from '../../lib/domain/entry-record.ts';
import { ANNOTATIONS } from '../../lib/domain/model.ts';
import { desiredWorkloadEntries } from '../../lib/projection/desired-istio.ts';
import { desiredExternalWorkloads } from '../../lib/projection/desired-linkerd.ts';
import type { KubeObject } from '../../lib/projection/objects.ts';
import { exportWarnings } from '../export-warnings.ts';
import {
  type LabelSelector,
  matchesSelector,
  parseLabelSelector,
  SELECTOR_HELP,
} from '../label-selector.ts';
import { printsObjects, serializeObject } from '../object-output.ts';
import { asList } from '../output.ts';
import { type OutputSpec, outputOption, TABLE } from '../output-option.ts';
import { type CommandRegistration, UsageError } from './context.ts';
import { namespaceOf, namespaceOption } from './resources.ts';

interface ExportOptions {
  format: 'istio' | 'linkerd';
  output: OutputSpec;
  namespace?: string;
  allNamespaces?: boolean;
  selector?: LabelSelector;
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
    .action(async (options: ExportOptions, command: Command) => {
      if (options.namespace !== undefined && options.allNamespaces) {
        throw new UsageError('use either -n <namespace> or -A, not both');
      }
      const namespace = options.allNamespaces ? undefined : namespaceOf(options);
      const { catalog } = await context.stores(command);
      const selector = options.selector ?? [];
      const entries = (await catalog.listEntries(namespace)).filter((record) =>
        matchesSelector(selector, renderWorkloadEntry(record).metadata.labels),
      );
      const groups = options.format === 'istio' ? [] : await catalog.listGroups(namespace);
      const desired =
        options.format === 'istio'
          ? desiredWorkloadEntries(entries, [])
          : desiredExternalWorkloads(entries, groups);
      const objects = options.format === 'istio' ? desired.objects.map(forApply) : desired.objects;
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
      const withoutHealth = desired.objects.filter(asksForHealth).length;
      if (withoutHealth > 0) {
        context.io.stderr.write(
          `note: ${withoutHealth === 1 ? '1 entry' : `${withoutHealth} entries`} exported without health (${ANNOTATIONS.healthChecksEnabled} and its Healthy condition): health is live state, and kubectl apply cannot write a WorkloadEntry's status, without which istiod would never send it traffic; for live health run the projector (docs/kubernetes.md)\n`,
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
 * projector writes it, every VM would lose its traffic. So neither goes out: without the
 * annotation istiod sends the entry traffic as it does any static WorkloadEntry.
 */
function forApply(object: KubeObject): KubeObject {
  const { status: _status, ...rest } = object;
  const annotations = { ...(object.metadata.annotations ?? {}) };
  delete annotations[ANNOTATIONS.healthChecksEnabled];
  const { annotations: _annotations, ...metadata } = object.metadata;
  return {
    ...rest,
    metadata: Object.keys(annotations).length > 0 ? { ...metadata, annotations } : metadata,
  };
}
