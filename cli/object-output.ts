import { toJson, toYaml } from '../lib/presentation/output.ts';
import { executeJsonPath } from './jsonpath.ts';
import type { OutputSpec } from './output-option.ts';

/** The `-o` formats that print the object (or the List) itself rather than rows. */
export type ObjectOutput = Extract<
  OutputSpec,
  { format: 'json' | 'yaml' | 'jsonpath' | 'go-template' }
>;

export function printsObjects(output: OutputSpec): output is ObjectOutput {
  return (
    output.format === 'json' ||
    output.format === 'yaml' ||
    output.format === 'jsonpath' ||
    output.format === 'go-template'
  );
}

/**
 * An object or List as json, yaml, or through the template of `-o jsonpath=` or
 * `-o go-template=` (whose failure while running throws, an error of the operation: exit 1).
 */
export function serializeObject(output: ObjectOutput, value: unknown): string {
  switch (output.format) {
    case 'jsonpath':
      return executeJsonPath(output.template, value);
    case 'go-template':
      return output.template.execute(value);
    case 'yaml':
      return toYaml(value);
    case 'json':
      return toJson(value);
  }
}
