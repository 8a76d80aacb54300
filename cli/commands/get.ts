import { type Command, InvalidArgumentError, Option } from 'commander';
import { isLabelKey } from '../../lib/domain/validation.ts';
import { countAgentVersions, isAgentSummary, printAgentSummary } from '../agent-summary.ts';
import { positiveDurationOption } from '../duration-option.ts';
import { Interrupted, interruption } from '../interrupt.ts';
import {
  JsonPathError,
  type JsonPathTemplate,
  jsonPathValues,
  parseJsonPathExpression,
} from '../jsonpath.ts';
import {
  type LabelSelector,
  matchesSelector,
  parseLabelSelector,
  SELECTOR_HELP,
} from '../label-selector.ts';
import { type OutputSpec, outputOption } from '../output-option.ts';
import { namesObjects, parseResourceArgs, type ResourceRequest } from '../resource-args.ts';
import { type PrintScope, printItems, WatchPrinter } from '../resource-printer.ts';
import { watchChanges } from '../watch.ts';
import {
  type CatalogLists,
  type CommandRegistration,
  ReportedFailure,
  type Stores,
  UsageError,
} from './context.ts';
import {
  byNamespaceAndName,
  entryItem,
  groupItem,
  namespaceOf,
  namespaceOption,
  notFound,
  RESOURCE_HELP,
  type ResourceItem,
} from './resources.ts';

interface GetOptions {
  namespace?: string;
  allNamespaces?: boolean;
  output: OutputSpec;
  selector?: LabelSelector;
  watch?: boolean;
  watchOnly?: boolean;
  outputWatchEvents?: boolean;
  watchInterval: number;
  showLabels?: boolean;
  labelColumns?: string[];
  headers: boolean;
  sortBy?: JsonPathTemplate;
  for?: string;
}

/** `get events` (cli/commands/events.ts): the entries' event history, as kubectl's. */
const EVENT_TYPES = new Set(['events', 'event', 'ev']);

export const WATCH_INTERVAL = '2s';

/** What `registrar --help` and `get --help` say get lists: every type it takes, not only two. */
const GET_DESCRIPTION = `list ${RESOURCE_HELP}, their events or their agents' versions, or show some by name`;

export const registerGet: CommandRegistration = (program, context) => {
  program
    .command('get')
    .description(GET_DESCRIPTION)
    .argument(
      '<resource>',
      `TYPE, TYPE1,TYPE2 or TYPE/NAME; types: ${RESOURCE_HELP}; also events (ev) and agents`,
    )
    .argument('[names...]', 'objects by name (or more TYPE/NAME)')
    .addOption(namespaceOption())
    .option('-A, --all-namespaces', 'list across all namespaces')
    .addOption(
      outputOption(['wide', 'name', 'json', 'yaml', 'jsonpath', 'go-template', 'custom-columns']),
    )
    .addOption(new Option('-l, --selector <selector>', SELECTOR_HELP).argParser(parseLabelSelector))
    .option('--show-labels', "a LABELS column last: each object's labels")
    .addOption(
      new Option(
        '-L, --label-columns <keys>',
        'a column per label key, comma-separated (repeatable): -L app,version',
      ).argParser(collectLabelKeys),
    )
    .option('--no-headers', 'print the table without its header row')
    .addOption(
      new Option(
        '--sort-by <jsonpath>',
        "sort the list by a field of the objects, such as '.spec.address' or '{.metadata.creationTimestamp}'",
      ).argParser(parseSortBy),
    )
    .option('--for <type/name>', 'with events: only those of we/NAME (also deleted), or wg/NAME')
    .option('-w, --watch', 'after the list, print each change until interrupted (Ctrl-C)')
    .option('--watch-only', 'like --watch, without printing the current list first')
    .option('--output-watch-events', 'with --watch: an EVENT column, ADDED, MODIFIED or DELETED')
    .addOption(
      positiveDurationOption(
        '--watch-interval <duration>',
        'how often --watch reads the registry',
        WATCH_INTERVAL,
      ),
    )
    .addHelpText(
      'after',
      `
Examples:
  registrar get we -n shop                            entries of one namespace
  registrar get we -A -o wide                         every entry, with NETWORK LOCALITY IDENTITY AGENT
  registrar get we/web-10.0.0.12 -n shop -o yaml      one entry
  registrar get we -l 'app=web,tier!=canary'          entries whose labels match
  registrar get we -o jsonpath='{.items[*].spec.address}'
  registrar get we -o go-template='{{range .items}}{{.metadata.name}} {{.spec.address}}{{"\\n"}}{{end}}'
  registrar get we -A --sort-by=.metadata.creationTimestamp --show-labels
  registrar get we -L app,version --no-headers         label values as columns, no header row
  registrar get we -o custom-columns=NAME:.metadata.name,ADDRESS:.spec.address,ZONE:.spec.locality
  registrar get we -n shop -w                         watch VMs come and go
  registrar get events -n shop --for we/web-10.0.0.12 why a VM left the mesh (also once deleted)
  registrar get events -A -w                          every entry's events as they happen
  registrar get agents -A                             entries per namespace and agent version

--watch reads the registry every --watch-interval (default ${WATCH_INTERVAL}: the registry has no
change stream) and prints a row for each entry added or modified since the last read, and
the last row of each one deleted (--output-watch-events says which). Ctrl-C stops it (exit 130).`,
    )
    .action(async (resource: string, names: string[], options: GetOptions, command: Command) => {
      if (isAgentSummary(resource) && names.length === 0) {
        const namespace = options.allNamespaces ? undefined : namespaceOf(options);
        const records = await (await context.catalogLists(command)).listEntries(namespace);
        const counts = countAgentVersions(records);
        printAgentSummary(context, counts, namespace, options.output.format);
        return;
      }
      if (EVENT_TYPES.has(resource.toLowerCase())) {
        await listEvents(context, command, names, options);
        return;
      }
      if (options.for !== undefined) throw new UsageError('--for goes with get events');
      let requests: ReturnType<typeof parseResourceArgs>;
      try {
        requests = parseResourceArgs('get', [resource, ...names]);
      } catch (error) {
        // get also lists events and agents: the refusal names every resource it takes.
        if (error instanceof UsageError && error.message.startsWith('unknown resource type')) {
          throw new UsageError(
            `${error.message.replace(/; use .*$/, '')}; use ${RESOURCE_HELP}, events (ev) or agents`,
          );
        }
        throw error;
      }
      const named = namesObjects(requests);
      const selector = options.selector ?? [];
      if (named && selector.length > 0) {
        throw new UsageError('a name cannot be given with a selector (-l): use one or the other');
      }
      if (named && options.allNamespaces) {
        throw new UsageError(
          'a name cannot be looked up across all namespaces; use -n <namespace>',
        );
      }
      const watching = options.watch === true || options.watchOnly === true;
      if (watching && requests.length > 1) {
        throw new UsageError('--watch follows one resource type at a time, such as we');
      }
      if (options.outputWatchEvents && !watching) {
        throw new UsageError('--output-watch-events goes with --watch');
      }
      if (options.sortBy && watching) {
        throw new UsageError(
          '--sort-by sorts a list, not the changes --watch prints: use one or the other',
        );
      }
      const namespace = options.allNamespaces ? undefined : namespaceOf(options);
      const scope: PrintScope = {
        output: options.output,
        namespace,
        qualifyNames: requests.length > 1,
        showLabels: options.showLabels === true,
        labelColumns: options.labelColumns ?? [],
        noHeaders: !options.headers,
      };
      // A list needs only the catalog's lists; objects by name need the stores' reads.
      const reads: Reads = named
        ? { named: await context.stores(command) }
        : { lists: await context.catalogLists(command) };
      const read = () => readItems(reads, requests, namespace, selector);
      const first = await read();
      if (first.missing.length > 0) {
        if (!watching && first.items.length > 0) {
          printItems(context, scope, kindsOf(requests), first.items, false);
        }
        for (const message of first.missing) context.io.stderr.write(`error: ${message}\n`);
        throw new ReportedFailure();
      }
      if (!watching) {
        const single = requests.length === 1 && requests[0]?.names.length === 1;
        const items = options.sortBy ? sortItems(first.items, options.sortBy) : first.items;
        printItems(context, scope, kindsOf(requests), items, single);
        return;
      }
      const kind = requests[0]?.kind ?? 'WorkloadEntry';
      const printer = new WatchPrinter(context, scope, kind, options.outputWatchEvents === true);
      const stop = interruption(context.io);
      try {
        await watchChanges({
          list: async () => (await read()).items,
          intervalMs: options.watchInterval,
          signal: stop.signal,
          onEvents: (events, initial) => {
            if (!(initial && options.watchOnly)) printer.print(events);
          },
        });
      } finally {
        stop.dispose();
      }
      throw new Interrupted(stop.reason());
    });
};

async function listEvents(
  context: Parameters<CommandRegistration>[1],
  command: Command,
  names: string[],
  options: GetOptions,
): Promise<void> {
  if (names.length > 0) throw new UsageError('get events takes no names; use --for we/NAME');
  if (
    options.selector?.length ||
    options.sortBy ||
    options.showLabels ||
    options.labelColumns?.length ||
    options.outputWatchEvents
  ) {
    throw new UsageError(
      'get events takes -n/-A, --for, -o, -w and --no-headers; not -l, -L, --sort-by, --show-labels or --output-watch-events',
    );
  }
  const { getEvents } = await import('./events.ts');
  await getEvents(context, command, {
    namespace: options.allNamespaces ? undefined : namespaceOf(options),
    output: options.output,
    ...(options.for !== undefined ? { for: options.for } : {}),
    watch: options.watch === true,
    watchOnly: options.watchOnly === true,
    watchInterval: options.watchInterval,
    headers: options.headers,
  });
}

/** `-L a,b -L c`: every key, in order, each a valid label key (kubectl's --label-columns). */
function collectLabelKeys(text: string, previous: string[] | undefined): string[] {
  const keys = text.split(',').map((key) => key.trim());
  for (const key of keys) {
    if (!isLabelKey(key)) {
      throw new InvalidArgumentError(`invalid label key '${key}' in '${text}': [prefix/]name`);
    }
  }
  return [...(previous ?? []), ...keys];
}

function parseSortBy(text: string): JsonPathTemplate {
  try {
    return parseJsonPathExpression(text);
  } catch (error) {
    if (!(error instanceof JsonPathError)) throw error;
    throw new InvalidArgumentError(`invalid jsonpath: ${error.message}`);
  }
}

/**
 * Sorted by the expression's first value, as kubectl's --sort-by: numbers as numbers, the rest
 * as text (RFC 3339 times sort as they read); objects without the field first. Stable, so
 * equal keys keep the namespace-and-name order.
 */
export function sortItems(
  items: readonly ResourceItem[],
  sortBy: JsonPathTemplate,
): ResourceItem[] {
  const keyed = items.map((item) => ({ item, key: jsonPathValues(sortBy, item.object)[0] }));
  keyed.sort((a, b) => compareKeys(a.key, b.key));
  return keyed.map(({ item }) => item);
}

function compareKeys(a: unknown, b: unknown): number {
  if (a === undefined || b === undefined)
    return (a === undefined ? 0 : 1) - (b === undefined ? 0 : 1);
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = typeof a === 'string' ? a : JSON.stringify(a);
  const y = typeof b === 'string' ? b : JSON.stringify(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function kindsOf(requests: readonly ResourceRequest[]) {
  return requests.map((request) => request.kind);
}

/**
 * The objects asked for: by name (each missing one is a message), or listed, filtered by the
 * selector and sorted by namespace and name. `namespace` is undefined under -A.
 */
type Reads = { named: Stores; lists?: undefined } | { lists: CatalogLists; named?: undefined };

async function readItems(
  { named: stores, lists }: Reads,
  requests: readonly ResourceRequest[],
  namespace: string | undefined,
  selector: LabelSelector,
): Promise<{ items: ResourceItem[]; missing: string[] }> {
  const items: ResourceItem[] = [];
  const missing: string[] = [];
  for (const { kind, names } of requests) {
    if (stores) {
      const ns = namespace ?? namespaceOf({});
      for (const name of names) {
        const ref = { namespace: ns, name };
        const found =
          kind === 'WorkloadGroup'
            ? await stores.registry
                .getGroup(ref)
                .then(async (g) => g && groupItem(g, await stores.catalog.listEntries(ns)))
            : await stores.catalog.getEntry(ref).then((e) => e && entryItem(e));
        if (found) items.push(found);
        else missing.push(notFound(kind, ref).message);
      }
      continue;
    }
    let listed: ResourceItem[];
    if (kind === 'WorkloadGroup') {
      // ENTRIES and UP-TO-DATE: the namespace's entries, one more Query (per namespace with -A).
      const [groups, entries] = await Promise.all([
        lists.listGroups(namespace),
        lists.listEntries(namespace),
      ]);
      listed = groups.map((group) => groupItem(group, entries));
    } else listed = (await lists.listEntries(namespace)).map(entryItem);
    items.push(
      ...listed
        .filter((item) => matchesSelector(selector, item.object.metadata.labels))
        .sort(byNamespaceAndName((item) => item)),
    );
  }
  return { items, missing };
}
