import { asList, columnWidths, formatRows, formatTable } from '../lib/presentation/output.ts';
import type { CliContext } from './commands/context.ts';
import { jsonPathValues } from './jsonpath.ts';
import { printsObjects, serializeObject } from './object-output.ts';
import type { OutputFormatName, OutputSpec } from './output-option.ts';

/**
 * The lists that are not WorkloadGroups or WorkloadEntries (tokens, policies, fail static's
 * cells) printed with the same `-o` formats and flags as `get`, so a habit learnt on one
 * command works on every one: a table (`--no-headers`), `wide`, `name`, `json`, `yaml`,
 * `jsonpath=`, `go-template=`, `custom-columns=`.
 */
export interface ListShape<T> {
  /** `-o name`'s prefix: `token/<id>`. */
  kind: string;
  headers: readonly string[];
  row(item: T): string[];
  /** Columns `-o wide` adds after the table's. */
  wideHeaders?: readonly string[];
  wideRow?(item: T): string[];
  /** The object json, yaml, jsonpath, go-template and custom-columns read. */
  view(item: T): Record<string, unknown>;
  name(item: T): string;
  /** Said on stderr when there is nothing to list, as kubectl's `No resources found`. */
  empty: string;
}

/** The `-o` formats a list of this shape takes (for `outputOption`). */
export const LIST_FORMATS: readonly Exclude<OutputFormatName, 'table'>[] = [
  'wide',
  'name',
  'json',
  'yaml',
  'jsonpath',
  'go-template',
  'custom-columns',
];

export function printList<T>(
  context: CliContext,
  shape: ListShape<T>,
  items: readonly T[],
  output: OutputSpec,
  options: { noHeaders?: boolean } = {},
): void {
  if (printsObjects(output)) {
    context.out(serializeObject(output, asList(items.map((item) => shape.view(item)))));
    return;
  }
  if (items.length === 0) {
    context.io.stderr.write(`${shape.empty}\n`);
    return;
  }
  if (output.format === 'name') {
    context.out(items.map((item) => `${shape.kind}/${shape.name(item)}\n`).join(''));
    return;
  }
  let headers: readonly string[];
  let rows: string[][];
  if (output.format === 'custom-columns') {
    headers = output.columns.map((column) => column.header);
    rows = items.map((item) =>
      output.columns.map((column) => {
        const values = jsonPathValues(column.expression, shape.view(item));
        return values.length === 0
          ? '<none>'
          : values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(',');
      }),
    );
  } else {
    const wide = output.format === 'wide';
    headers = wide ? [...shape.headers, ...(shape.wideHeaders ?? [])] : shape.headers;
    rows = items.map((item) =>
      wide ? [...shape.row(item), ...(shape.wideRow?.(item) ?? [])] : shape.row(item),
    );
  }
  context.out(
    options.noHeaders ? formatRows(rows, columnWidths(rows)) : formatTable(headers, rows),
  );
}
