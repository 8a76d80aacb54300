import { type Command, Option } from 'commander';
import {
  asList,
  formatTable,
  OUTPUT_FORMATS,
  type OutputFormat,
  toJson,
  toYaml,
} from '../output.ts';
import { type CliContext, type CommandRegistration, UsageError } from './context.ts';
import {
  ageOf,
  byNamespaceAndName,
  entryRow,
  namespaceOf,
  namespaceOption,
  notFound,
  RESOURCE_HELP,
  renderEntry,
  renderGroup,
  resourceKind,
} from './resources.ts';

interface GetOptions {
  namespace?: string;
  allNamespaces?: boolean;
  output: OutputFormat;
}

export const registerGet: CommandRegistration = (program, context) => {
  program
    .command('get')
    .description(`list ${RESOURCE_HELP}, or show one`)
    .argument('<resource>', RESOURCE_HELP)
    .argument('[name]', 'one object by name')
    .addOption(namespaceOption())
    .option('-A, --all-namespaces', 'list across all namespaces')
    .addOption(
      new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table'),
    )
    .action(
      async (resource: string, name: string | undefined, options: GetOptions, command: Command) => {
        const kind = resourceKind(resource);
        if (name !== undefined && options.allNamespaces) {
          throw new UsageError(
            'a name cannot be looked up across all namespaces; use -n <namespace>',
          );
        }
        const namespace = options.allNamespaces ? undefined : namespaceOf(options);
        const { catalog } = await context.stores(command);
        const now = context.now();
        if (kind === 'WorkloadGroup') {
          const groups = (await catalog.listGroups(namespace))
            .map(renderGroup)
            .sort(byNamespaceAndName((g) => g.metadata));
          const items =
            name === undefined ? groups : groups.filter((g) => g.metadata.name === name);
          if (name !== undefined && items.length === 0)
            throw notFound(kind, { namespace: namespaceOf(options), name });
          const rows = items.map((g) => [
            g.metadata.name,
            String(g.metadata.generation ?? ''),
            ageOf(g.metadata, now),
          ]);
          print(
            context,
            options,
            name !== undefined,
            items,
            ['NAME', 'GENERATION', 'AGE'],
            rows,
            namespace,
          );
          return;
        }
        const records =
          name === undefined
            ? await catalog.listEntries(namespace)
            : [await catalog.getEntry({ namespace: namespaceOf(options), name })];
        const found = records
          .filter((r) => r !== undefined)
          .sort(byNamespaceAndName((r) => r.entry.metadata));
        if (name !== undefined && found.length === 0)
          throw notFound(kind, { namespace: namespaceOf(options), name });
        const items = found.map(renderEntry);
        const rows = found.map((r) => entryRow(r, now));
        const headers = ['NAME', 'ADDRESS', 'CONNECTED', 'HEALTHY', 'AGE'];
        print(context, options, name !== undefined, items, headers, rows, namespace);
      },
    );
};

/** Prints like kubectl: one object or a List in json/yaml, a table with NAMESPACE under -A. */
function print(
  context: CliContext,
  options: GetOptions,
  single: boolean,
  items: { metadata: { namespace: string } }[],
  headers: string[],
  rows: string[][],
  namespace: string | undefined,
): void {
  if (options.output !== 'table') {
    const value = single ? items[0] : asList(items);
    context.out(options.output === 'json' ? toJson(value) : toYaml(value));
    return;
  }
  if (rows.length === 0) {
    // kubectl says so on stderr, so a script reading stdout sees an empty list.
    const where = namespace === undefined ? '' : ` in ${namespace} namespace`;
    context.io.stderr.write(`No resources found${where}.\n`);
    return;
  }
  if (namespace !== undefined) {
    context.out(formatTable(headers, rows));
    return;
  }
  const withNamespace = rows.map((row, i) => [items[i]?.metadata.namespace ?? '', ...row]);
  context.out(formatTable(['NAMESPACE', ...headers], withNamespace));
}
