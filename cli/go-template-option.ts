import { createRequire } from 'node:module';
import { InvalidArgumentError } from 'commander';
import type { GoTemplate } from './go-template/template.ts';

/**
 * `-o go-template=TEMPLATE` and `-o go-template-file=FILE` (and kubectl's other names for
 * them, `template=` and `templatefile=`): the template is read with the command line, so a
 * broken one is a usage error (exit 2) before anything is read from the registry.
 */
export const GO_TEMPLATE_NAMES: Readonly<Record<string, 'inline' | 'file'>> = {
  'go-template': 'inline',
  template: 'inline',
  'go-template-file': 'file',
  templatefile: 'file',
};

export const GO_TEMPLATE_EXAMPLE = `'{{range .items}}{{.metadata.name}}{{"\\n"}}{{end}}'`;

// The engine (cli/go-template/) is required when a go-template is given, not imported with
// this module: every command with -o would otherwise load its files, and `--help` and `get`
// stay fast without them (issue 17).
const require = createRequire(import.meta.url);

/** A template's text, read; `file` names where it came from, for the error. */
export function parseGoTemplate(source: string, file?: string): GoTemplate {
  const engine = require('./go-template/template.ts') as typeof import('./go-template/template.ts');
  try {
    return engine.compileGoTemplate(source);
  } catch (error) {
    if (!engine.isGoTemplateError(error)) throw error;
    const where = file === undefined ? '' : ` in ${file}`;
    throw new InvalidArgumentError(`invalid go-template${where}: ${error.message}`);
  }
}
