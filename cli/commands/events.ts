import type { Command } from 'commander';
import type { EntryEvent } from '../../lib/domain/entry-events.ts';
import { ISTIO_API_VERSION, toRfc3339 } from '../../lib/domain/model.ts';
import { eventsOf } from '../../lib/presentation/entry-events.ts';
import {
  asList,
  columnWidths,
  formatAge,
  formatRows,
  toJson,
  toYaml,
} from '../../lib/presentation/output.ts';
import { Interrupted, interruption } from '../interrupt.ts';
import type { OutputSpec } from '../output-option.ts';
import { parseResourceArgs } from '../resource-args.ts';
import { sleep } from '../watch.ts';
import { type CliContext, type Stores, UsageError } from './context.ts';

/**
 * `registrar get events`: the entries' events as `kubectl get events` lists a namespace's,
 * oldest first. Live entries carry theirs (read with the entries: one Query per namespace);
 * deleted ones left a history item (one more Query), so a VM that left the mesh still has its
 * story: `get events --for we/NAME`. `-w` reads again every --watch-interval and prints the
 * events it had not printed (events are only ever added).
 */
export interface EventsOptions {
  namespace: string | undefined;
  output: OutputSpec;
  /** `--for TYPE/NAME`: one entry's events (we), or those of a group's entries (wg). */
  for?: string;
  watch: boolean;
  watchOnly: boolean;
  watchInterval: number;
  /** False with --no-headers: no header row. */
  headers: boolean;
}

/** One event of one entry (live or deleted), as listed. */
interface EventRow {
  namespace: string;
  entry: string;
  event: EntryEvent;
}

export async function getEvents(
  context: CliContext,
  command: Command,
  options: EventsOptions,
): Promise<void> {
  const { output } = options;
  if (output.format === 'jsonpath' || output.format === 'custom-columns') {
    throw new UsageError('get events prints a table (-o wide), -o name, -o json or -o yaml');
  }
  const scope = forScope(options.for);
  if (scope && options.namespace === undefined) {
    throw new UsageError('--for looks up one namespace; use -n <namespace> instead of -A');
  }
  const stores = await context.stores(command);
  const read = () => readEvents(stores, options.namespace, scope, context.now());
  const printer = new EventPrinter(context, options);
  const first = await read();
  if (!options.watch && !options.watchOnly) {
    printer.printList(first);
    return;
  }
  const seen = new Set(first.map(keyOf));
  if (!options.watchOnly) printer.printRows(first);
  const stop = interruption(context.io);
  try {
    while (!stop.signal.aborted) {
      await sleep(options.watchInterval, stop.signal);
      if (stop.signal.aborted) break;
      const fresh = (await read()).filter((row) => !seen.has(keyOf(row)));
      for (const row of fresh) seen.add(keyOf(row));
      printer.printRows(fresh);
    }
  } finally {
    stop.dispose();
  }
  throw new Interrupted(stop.reason());
}

type Scope = { kind: 'WorkloadEntry' | 'WorkloadGroup'; name: string };

function forScope(text: string | undefined): Scope | undefined {
  if (text === undefined) return undefined;
  const requests = text.includes('/') ? parseResourceArgs('get', [text]) : [];
  const [request] = requests;
  const name = request?.names[0];
  if (request === undefined || requests.length !== 1 || name === undefined) {
    throw new UsageError(
      `--for takes TYPE/NAME, such as we/web-10.0.0.12 or wg/web; got '${text}'`,
    );
  }
  return { kind: request.kind, name };
}

/** Every event of the namespace (all: undefined), or of the scope, oldest first. */
async function readEvents(
  stores: Stores,
  namespace: string | undefined,
  scope: Scope | undefined,
  now: number,
): Promise<EventRow[]> {
  const rows: EventRow[] = [];
  const entryName = scope?.kind === 'WorkloadEntry' ? scope.name : undefined;
  const group = scope?.kind === 'WorkloadGroup' ? scope.name : undefined;
  const records =
    entryName !== undefined && namespace !== undefined
      ? [await stores.catalog.getEntry({ namespace, name: entryName })].filter(
          (r) => r !== undefined,
        )
      : await stores.catalog.listEntries(namespace);
  const [policy, disruption] = await Promise.all([
    stores.sweepPolicy.read(),
    stores.registry.disruptionRecord(),
  ]);
  const sweep = { disruption, gracePeriodMs: policy?.gracePeriodMs };
  for (const record of records) {
    if (group !== undefined && record.autoRegistrationGroup !== group) continue;
    const { namespace: ns, name } = record.entry.metadata;
    for (const event of eventsOf(record, now, sweep))
      rows.push({ namespace: ns, entry: name, event });
  }
  const namespaces =
    namespace !== undefined ? [namespace] : (await stores.catalog.listNamespaces()).namespaces;
  for (const ns of namespaces) {
    for (const deleted of await stores.maintenance.deletedEntries(ns, entryName, now)) {
      if (group !== undefined && deleted.group !== group) continue;
      for (const event of deleted.events) {
        rows.push({ namespace: ns, entry: deleted.ref.name, event });
      }
    }
  }
  return rows.sort(
    (a, b) =>
      a.event.at - b.event.at ||
      a.namespace.localeCompare(b.namespace) ||
      a.entry.localeCompare(b.entry),
  );
}

function keyOf(row: EventRow): string {
  const { event } = row;
  return `${row.namespace}/${row.entry}/${event.at}/${event.reason}/${event.message}`;
}

/** kubectl's Event (core/v1), for -o json|yaml and -o name. */
function eventObject(row: EventRow) {
  const { event } = row;
  const time = toRfc3339(event.at);
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: eventName(row), namespace: row.namespace },
    involvedObject: {
      apiVersion: ISTIO_API_VERSION,
      kind: 'WorkloadEntry',
      name: row.entry,
      namespace: row.namespace,
    },
    reason: event.reason,
    message: event.message,
    type: event.type,
    source: { component: event.from },
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}

/** `<entry>.<time in hex>`, as Kubernetes names events after their object. */
function eventName(row: EventRow): string {
  return `${row.entry}.${row.event.at.toString(16)}`;
}

class EventPrinter {
  readonly #context: CliContext;
  readonly #options: EventsOptions;
  #widths: number[] | undefined;

  constructor(context: CliContext, options: EventsOptions) {
    this.#context = context;
    this.#options = options;
  }

  printList(rows: EventRow[]): void {
    const { format } = this.#options.output;
    if (format === 'json' || format === 'yaml') {
      const list = asList(rows.map(eventObject));
      this.#context.out(format === 'json' ? toJson(list) : toYaml(list));
      return;
    }
    if (rows.length === 0) {
      const where =
        this.#options.namespace === undefined ? '' : ` in ${this.#options.namespace} namespace`;
      this.#context.io.stderr.write(`No events found${where}.\n`);
      return;
    }
    this.printRows(rows);
  }

  /** Rows under the first table's columns (a watch prints more later). */
  printRows(rows: EventRow[]): void {
    const { format } = this.#options.output;
    if (format === 'json' || format === 'yaml') {
      for (const row of rows) {
        const object = eventObject(row);
        this.#context.out(format === 'json' ? toJson(object) : `---\n${toYaml(object)}`);
      }
      return;
    }
    if (format === 'name') {
      this.#context.out(rows.map((row) => `event/${eventName(row)}\n`).join(''));
      return;
    }
    const now = this.#context.now();
    const cells = rows.map((row) => this.#cells(row, now));
    if (this.#widths === undefined) {
      const table = this.#options.headers ? [this.#headers(), ...cells] : cells;
      this.#widths = columnWidths(table);
      this.#context.out(formatRows(table, this.#widths));
      return;
    }
    if (cells.length > 0) this.#context.out(formatRows(cells, this.#widths));
  }

  #headers(): string[] {
    const all = this.#options.namespace === undefined ? ['NAMESPACE'] : [];
    const wide = this.#options.output.format === 'wide' ? ['SOURCE'] : [];
    return [...all, 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', ...wide, 'MESSAGE'];
  }

  #cells(row: EventRow, now: number): string[] {
    const { event } = row;
    const all = this.#options.namespace === undefined ? [row.namespace] : [];
    const wide = this.#options.output.format === 'wide' ? [event.from] : [];
    return [
      ...all,
      formatAge(event.at, now),
      event.type,
      event.reason,
      `workloadentry/${row.entry}`,
      ...wide,
      event.message,
    ];
  }
}
