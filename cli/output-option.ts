import { InvalidArgumentError, Option } from 'commander';
import { JsonPathError, type JsonPathTemplate, parseJsonPathTemplate } from './jsonpath.ts';

/**
 * `-o/--output` as kubectl spells it: `wide`, `name`, `json`, `yaml`, `jsonpath=TEMPLATE`
 * (also `-o=json`: see `splitShortOptionValues` in main.ts). Without `-o`, a table.
 */
export type OutputSpec =
  | { format: 'table' | 'wide' | 'name' | 'json' | 'yaml' }
  | { format: 'jsonpath'; template: JsonPathTemplate };

export type OutputFormatName = OutputSpec['format'];

export const TABLE: OutputSpec = { format: 'table' };

/** The `-o` option accepting `formats` (the table is the default, never named). */
export function outputOption(formats: readonly Exclude<OutputFormatName, 'table'>[]): Option {
  const shown = formats.map((format) => (format === 'jsonpath' ? 'jsonpath=TEMPLATE' : format));
  return new Option('-o, --output <format>', `output format: ${shown.join(', ')}`)
    .argParser((text: string) => parseOutput(text, formats))
    .default(TABLE, 'a table');
}

export function parseOutput(
  text: string,
  formats: readonly Exclude<OutputFormatName, 'table'>[],
): OutputSpec {
  const allowed = () =>
    formats.map((format) => (format === 'jsonpath' ? 'jsonpath=TEMPLATE' : format)).join(', ');
  const [name = '', ...rest] = text.split('=');
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
  const format = formats.find((candidate) => candidate === text && candidate !== 'jsonpath');
  if (format === undefined) throw new InvalidArgumentError(`supported formats: ${allowed()}`);
  return { format } as OutputSpec;
}
