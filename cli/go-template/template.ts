import { GoTemplateError, isGoTemplateError } from './errors.ts';
import { execute } from './exec.ts';
import { FUNCTION_NAMES } from './functions.ts';
import { parse } from './parser.ts';
import { fromJson } from './values.ts';

/**
 * Go's text/template for `-o go-template=` and `-o go-template-file=`, as kubectl runs it:
 * the template is named `output`, the object (or the `List`) is its data as JSON would carry
 * it, and a missing key prints `<no value>`. No maintained npm package implements Go's
 * templates (`go-text-template` cannot run `range`), so the engine is the project's own.
 */
export interface GoTemplate {
  source: string;
  /** The text the template makes of `data`; throws a GoTemplateError (phase `exec`). */
  execute(data: unknown): string;
}

export { GoTemplateError, isGoTemplateError };

/** Reads a template; throws a GoTemplateError (phase `parse`) naming the line and column. */
export function compileGoTemplate(source: string, name = 'output'): GoTemplate {
  const nodes = parse(source, name, FUNCTION_NAMES);
  return {
    source,
    execute(data: unknown): string {
      try {
        return execute(nodes, fromJson(data), source, name);
      } catch (error) {
        if (!isGoTemplateError(error)) throw error;
        // kubectl's words around Go's error.
        throw new GoTemplateError('exec', `error executing template: ${error.message}`);
      }
    },
  };
}
