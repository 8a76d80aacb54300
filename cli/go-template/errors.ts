/**
 * Errors of a Go template, worded as Go's text/template words them so a message found on the
 * web about kubectl's `-o go-template` matches ours: `template: output:1:15: ...`.
 */

/** Where a template goes wrong: while it is read (a usage error) or while it runs on data. */
export type TemplatePhase = 'parse' | 'exec';

export class GoTemplateError extends Error {
  // A name, not only a class: the engine is loaded on demand (cli/output-option.ts) and may be
  // a different copy of this module than a caller's, where `instanceof` would not hold.
  override readonly name = 'GoTemplateError';
  readonly phase: TemplatePhase;

  constructor(phase: TemplatePhase, message: string) {
    super(message);
    this.phase = phase;
  }
}

export function isGoTemplateError(error: unknown): error is GoTemplateError {
  return error instanceof Error && error.name === 'GoTemplateError';
}

/**
 * `name:line:column` of a position in the source, the column counted in bytes from 1, as Go's
 * `ErrorContext` counts it.
 */
export function location(name: string, source: string, pos: number): string {
  const before = source.slice(0, pos);
  const lineStart = before.lastIndexOf('\n') + 1;
  const line = before.split('\n').length;
  const column = Buffer.byteLength(before.slice(lineStart)) + 1;
  return `${name}:${line}:${column}`;
}

/** A parse error: `template: output:1:5: unexpected "}" in operand`. */
export function parseError(
  name: string,
  source: string,
  pos: number,
  message: string,
): GoTemplateError {
  return new GoTemplateError('parse', `template: ${location(name, source, pos)}: ${message}`);
}

/** The text Go shows of a node in an error: at most 20 characters, then `...`. */
export function errorContext(text: string): string {
  return text.length > 20 ? `${text.slice(0, 20)}...` : text;
}
