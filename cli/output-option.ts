import { readFileSync } from 'node:fs';
import { InvalidArgumentError, Option } from 'commander';
import type { GoTemplate } from './go-template/template.ts';
import { GO_TEMPLATE_EXAMPLE, GO_TEMPLATE_NAMES, parseGoTemplate } from './go-template-option.ts';
import {
  JsonPathError,
  type JsonPathTemplate,
  parseJsonPathExpression,
  parseJsonPathTemplate,
} from './jsonpath.ts';

/**
 * `-o/--output` as kubectl spells it: `wide`, `name`, `json`, `yaml`, `jsonpath=TEMPLATE`,
 * `custom-columns=HEADER:EXPR,...` or `custom-columns-file=FILE`, `go-template=TEMPLATE` or
 * `go-template-file=FILE` (also `-o=json`: see `splitShortOptionValues` in main.ts). Without
 * `-o`, a table.
 */
export type OutputSpec =
  | { format: 'table' | 'wide' | 'name' }
  | { format: 'json' | 'yaml' }
  | { format: 'jsonpath'; template: JsonPathTemplate }
  | { format: 'go-template'; template: GoTemplate }
  | { format: 'custom-columns'; columns: CustomColumn[] };

/** One column of `-o custom-columns`: its header and the expression of its cells. */
export interface CustomColumn {
  header: string;
  expression: JsonPathTemplate;
}

export type OutputFormatName = OutputSpec['format'];

/** How each format is written in `-o`'s help and errors. */
const SHOWN: Partial<Record<OutputFormatName, string>> = {
  jsonpath: 'jsonpath=TEMPLATE',
  'go-template': 'go-template=TEMPLATE|go-template-file=FILE',
  'custom-columns': 'custom-columns=NAME:.metadata.name,...|custom-columns-file=FILE',
};

export const TABLE: OutputSpec = { format: 'table' };

/** What Tab offers for each format: the name, or the name and its '=' (a value follows). */
const COMPLETED: Partial<Record<OutputFormatName, string[]>> = {
  jsonpath: ['jsonpath='],
  'go-template': ['go-template=', 'go-template-file='],
  'custom-columns': ['custom-columns=', 'custom-columns-file='],
};

/** The `-o` values an option offers to shell completion (cli/commands/completion.ts). */
export const COMPLETION_VALUES = Symbol('completion values');

/** The `-o` option accepting `formats` (the table is the default, never named). */
export function outputOption(formats: readonly Exclude<OutputFormatName, 'table'>[]): Option {
  const option = new Option('-o, --output <format>', `output format: ${formatsShown(formats)}`)
    .argParser((text: string) => parseOutput(text, formats))
    .default(TABLE, 'a table');
  return withCompletionValues(option, completionValues(formats));
}

/** The formats as `-o`'s help and errors list them. */
export function formatsShown(formats: readonly OutputFormatName[]): string {
  return formats.map((format) => SHOWN[format] ?? format).join(', ');
}

/** What Tab offers after `-o` for these formats. */
export function completionValues(formats: readonly OutputFormatName[]): string[] {
  return formats.flatMap((format) => COMPLETED[format] ?? [format]);
}

/** Marks an option with the values shell completion offers for it. */
export function withCompletionValues(option: Option, values: readonly string[]): Option {
  Object.defineProperty(option, COMPLETION_VALUES, { value: values });
  return option;
}

export function completionValuesOf(option: Option): readonly string[] | undefined {
  return (option as unknown as Record<symbol, readonly string[] | undefined>)[COMPLETION_VALUES];
}

export function parseOutput(
  text: string,
  formats: readonly Exclude<OutputFormatName, 'table'>[],
): OutputSpec {
  const [name = '', ...rest] = text.split('=');
  if (name.startsWith('custom-columns') && formats.includes('custom-columns')) {
    return { format: 'custom-columns', columns: parseCustomColumns(name, rest.join('=')) };
  }
  const goTemplate = GO_TEMPLATE_NAMES[name];
  if (goTemplate && formats.includes('go-template')) {
    const value = rest.join('=');
    if (value === '') {
      throw new InvalidArgumentError(
        goTemplate === 'file'
          ? `${name} needs a file: -o ${name}=entries.tmpl`
          : `${name} needs a template: -o ${name}=${GO_TEMPLATE_EXAMPLE}`,
      );
    }
    const template =
      goTemplate === 'file'
        ? parseGoTemplate(readFormatFile(name, value), value)
        : parseGoTemplate(value);
    return { format: 'go-template', template };
  }
  if (name === 'jsonpath' && formats.includes('jsonpath')) {
    const template = rest.join('=');
    if (rest.length === 0 || template === '') {
      throw new InvalidArgumentError(
        "jsonpath needs a template: -o jsonpath='{.items[*].metadata.name}'",
      );
    }
    try {
      return { format: 'jsonpath', template: parseJsonPathTemplate(template) };
    } catch (error) {
      if (!(error instanceof JsonPathError)) throw error;
      throw new InvalidArgumentError(`invalid jsonpath template: ${error.message}`);
    }
  }
  const format = formats.find((candidate) => candidate === text && SHOWN[candidate] === undefined);
  if (format === undefined) {
    throw new InvalidArgumentError(`supported formats: ${formatsShown(formats)}`);
  }
  return { format } as OutputSpec;
}

/**
 * `custom-columns=NAME:.metadata.name,ADDRESS:.spec.address`, or `custom-columns-file=FILE`
 * whose first line holds the headers and second the expressions, whitespace apart (kubectl's
 * two spellings).
 */
function parseCustomColumns(name: string, value: string): CustomColumn[] {
  let pairs: [string, string][];
  if (name === 'custom-columns') {
    if (value === '') {
      throw new InvalidArgumentError(
        'custom-columns needs columns: -o custom-columns=NAME:.metadata.name,ADDRESS:.spec.address',
      );
    }
    pairs = value.split(',').map((column) => {
      const at = column.indexOf(':');
      if (at <= 0 || at === column.length - 1) {
        throw new InvalidArgumentError(
          `custom-columns: '${column}' is not HEADER:EXPRESSION, such as NAME:.metadata.name`,
        );
      }
      return [column.slice(0, at), column.slice(at + 1)];
    });
  } else if (name === 'custom-columns-file') {
    if (value === '') {
      throw new InvalidArgumentError(
        'custom-columns-file needs a file: -o custom-columns-file=columns.txt',
      );
    }
    const lines = readFormatFile(name, value)
      .split('\n')
      .map((line) => line.trim().split(/\s+/));
    const [headers = [], expressions = []] = lines.filter((words) => words.join('') !== '');
    if (headers.length === 0 || headers.length !== expressions.length) {
      throw new InvalidArgumentError(
        `custom-columns-file ${value}: needs a line of headers and a line of as many expressions, got ${headers.length} and ${expressions.length}`,
      );
    }
    pairs = headers.map((header, i) => [header, expressions[i] as string]);
  } else {
    throw new InvalidArgumentError(`unknown output format '${name}'`);
  }
  return pairs.map(([header, source]) => {
    try {
      return { header, expression: parseJsonPathExpression(source) };
    } catch (error) {
      if (!(error instanceof JsonPathError)) throw error;
      throw new InvalidArgumentError(`custom-columns: column ${header}: ${error.message}`);
    }
  });
}

/** The text of a file an `-o` format names (`custom-columns-file=`, `go-template-file=`). */
function readFormatFile(format: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidArgumentError(
      `cannot read ${format} ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
}
