import { type Command, Option } from 'commander';
import { stringify } from 'yaml';
import { desiredWorkloadEntries } from '../../lib/projection/desired-istio.ts';
import { desiredExternalWorkloads } from '../../lib/projection/desired-linkerd.ts';
import { exportWarnings } from '../export-warnings.ts';
import { type CommandRegistration, UsageError } from './context.ts';
import { namespaceOf, namespaceOption } from './resources.ts';

interface ExportOptions {
  format: 'istio' | 'linkerd';
  namespace?: string;
  allNamespaces?: boolean;
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
    .action(async (options: ExportOptions, command: Command) => {
      if (options.namespace !== undefined && options.allNamespaces) {
        throw new UsageError('use either -n <namespace> or -A, not both');
      }
      const namespace = options.allNamespaces ? undefined : namespaceOf(options);
      const { catalog } = await context.stores(command);
      const entries = await catalog.listEntries(namespace);
      const groups = options.format === 'istio' ? [] : await catalog.listGroups(namespace);
      const desired =
        options.format === 'istio'
          ? desiredWorkloadEntries(entries, [])
          : desiredExternalWorkloads(entries, groups);
      context.out(desired.objects.map((object) => `---\n${stringify(object)}`).join(''));
      for (const line of exportWarnings(desired.problems, entries, groups)) {
        context.io.stderr.write(`${line}\n`);
      }
    });
};
