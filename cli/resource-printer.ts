import {
  asList,
  columnWidths,
  formatLabels,
  formatRows,
  formatTable,
} from '../lib/presentation/output.ts';
import type { CliContext } from './commands/context.ts';
import { COLUMNS, QUALIFIED, type ResourceItem, type ResourceKind } from './commands/resources.ts';
import { jsonPathValues } from './jsonpath.ts';
import { printsObjects, serializeObject } from './object-output.ts';
import type { OutputSpec } from './output-option.ts';
import type { WatchEvent } from './watch.ts';

/** How `get` prints: which namespace was asked for (undefined: all, with a NAMESPACE column). */
export interface PrintScope {
  output: OutputSpec;
  namespace: string | undefined;
  /** More than one resource type was asked for: names print as TYPE/NAME, as kubectl does. */
  qualifyNames: boolean;
  /** `--show-labels`: a LABELS column last, in the table and wide formats. */
  showLabels?: boolean;
  /** `-L key,...`: a column per label key (its value, empty when absent), before LABELS. */
  labelColumns?: readonly string[];
  /** `--no-headers`: the table without its header row, for scripts. */
  noHeaders?: boolean;
}

/**
 * Prints a `get` result as kubectl does: one object when exactly one was named, else a v1
 * List for json/yaml/jsonpath/go-template; a table per resource type (blank line between) for table and
 * wide; `TYPE/NAME` lines for name. Nothing found is said on stderr, so stdout stays empty.
 */
export function printItems(
  context: CliContext,
  scope: PrintScope,
  kinds: readonly ResourceKind[],
  items: readonly ResourceItem[],
  single: boolean,
): void {
  const { output } = scope;
  if (printsObjects(output)) {
    const value = single ? items[0]?.object : asList(items.map((item) => item.object));
    if (value !== undefined) context.out(serializeObject(output, value));
    return;
  }
  if (items.length === 0) {
    const where = scope.namespace === undefined ? '' : ` in ${scope.namespace} namespace`;
    context.io.stderr.write(`No resources found${where}.\n`);
    return;
  }
  if (output.format === 'name') {
    context.out(items.map((item) => `${QUALIFIED[item.kind]}/${item.name}\n`).join(''));
    return;
  }
  const now = context.now();
  const tables = kinds
    .map((kind) => items.filter((item) => item.kind === kind))
    .filter((group) => group.length > 0)
    .map((group) => {
      const rows = group.map((item) => row(scope, item, now));
      const head = headers(scope, group[0]?.kind ?? 'WorkloadEntry');
      return scope.noHeaders ? formatRows(rows, columnWidths(rows)) : formatTable(head, rows);
    });
  context.out(tables.join(scope.noHeaders ? '' : '\n'));
}

/**
 * Prints `get --watch` events: the first read as a table (or objects), then one row per
 * change under the same columns; with `events`, an EVENT column first (ADDED, MODIFIED,
 * DELETED), as `kubectl get --watch --output-watch-events`.
 */
export class WatchPrinter {
  #widths: number[] | undefined;
  #printed = 0;
  readonly #context: CliContext;
  readonly #scope: PrintScope;
  readonly #kind: ResourceKind;
  readonly #events: boolean;

  constructor(context: CliContext, scope: PrintScope, kind: ResourceKind, events: boolean) {
    this.#context = context;
    this.#scope = scope;
    this.#kind = kind;
    this.#events = events;
  }

  print(events: readonly WatchEvent[]): void {
    if (events.length === 0) return;
    const { output } = this.#scope;
    const out = (text: string) => this.#context.out(text);
    if (isTabular(output)) {
      const now = this.#context.now();
      const rows = events.map((event) => {
        const cells = row(this.#scope, event.item, now);
        return this.#events ? [event.type, ...cells] : cells;
      });
      if (this.#widths === undefined) {
        const head = headers(this.#scope, this.#kind);
        const headed = [this.#events ? ['EVENT', ...head] : head, ...rows];
        this.#widths = columnWidths(headed);
        out(formatRows(this.#scope.noHeaders ? rows : headed, this.#widths));
      } else out(formatRows(rows, this.#widths));
      return;
    }
    for (const event of events) {
      const object = event.item.object;
      if (!printsObjects(output)) {
        const name = `${QUALIFIED[event.item.kind]}/${event.item.name}\n`;
        out(this.#events ? `${event.type} ${name}` : name);
        continue;
      }
      const value = this.#events ? { type: event.type, object } : object;
      if (output.format === 'yaml' && this.#printed > 0) out('---\n');
      out(serializeObject(output, value));
      this.#printed++;
    }
  }
}

function isTabular(output: OutputSpec): boolean {
  return (
    output.format === 'table' || output.format === 'wide' || output.format === 'custom-columns'
  );
}

/** kubectl's columns: custom ones as given (no NAMESPACE), else NAMESPACE under -A, LABELS last. */
function headers(scope: PrintScope, kind: ResourceKind): string[] {
  const { output } = scope;
  if (output.format === 'custom-columns') return output.columns.map((column) => column.header);
  const columns = COLUMNS[kind];
  const all = output.format === 'wide' ? [...columns.table, ...columns.wide] : [...columns.table];
  for (const key of scope.labelColumns ?? []) all.push(labelColumnHeader(key));
  if (scope.showLabels) all.push('LABELS');
  return scope.namespace === undefined ? ['NAMESPACE', ...all] : all;
}

function row(scope: PrintScope, item: ResourceItem, now: number): string[] {
  const { output } = scope;
  if (output.format === 'custom-columns') {
    // Several values in one cell are comma-separated; none is <none>, as kubectl prints them.
    return output.columns.map((column) => {
      const values = jsonPathValues(column.expression, item.object);
      return values.length === 0
        ? '<none>'
        : values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(',');
    });
  }
  const cells = item.cells(now);
  const [name = '', ...rest] = cells.table;
  const shown = scope.qualifyNames ? `${QUALIFIED[item.kind]}/${name}` : name;
  const all = [shown, ...rest, ...(output.format === 'wide' ? cells.wide : [])];
  for (const key of scope.labelColumns ?? []) all.push(item.object.metadata.labels?.[key] ?? '');
  if (scope.showLabels) all.push(formatLabels(item.object.metadata.labels));
  return scope.namespace === undefined ? [item.namespace, ...all] : all;
}

/** kubectl's header of a `-L` column: the key's name after any prefix, upper case. */
export function labelColumnHeader(key: string): string {
  return key.slice(key.lastIndexOf('/') + 1).toUpperCase();
}
