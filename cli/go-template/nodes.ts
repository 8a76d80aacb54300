/**
 * The parse tree of a Go template: the nodes of Go's text/template/parse that kubectl's
 * templates use. Every node keeps where it is in the source (`pos`, `end`), so an error
 * names the line and column and shows the text it is about.
 */

export interface Span {
  pos: number;
  end: number;
}

/** One word of a command. */
export type Operand = Span &
  (
    | { type: 'field'; fields: string[] }
    | { type: 'variable'; name: string; fields: string[] }
    | { type: 'chain'; node: Operand; fields: string[] }
    | { type: 'function'; name: string }
    | { type: 'dot' }
    | { type: 'nil' }
    | { type: 'bool'; value: boolean }
    | { type: 'number'; value: number; isFloat: boolean }
    | { type: 'string'; value: string }
    | { type: 'pipeline'; pipeline: Pipeline }
  );

/** `index .metadata.labels "app"`: a function or value and its arguments. */
export interface Command extends Span {
  args: Operand[];
}

/** `$x := .a | printf "%s"`: commands joined by `|`, each one's value the next one's last argument. */
export interface Pipeline extends Span {
  /** Variables the pipeline declares (`:=`) or sets (`=`, when `assign`). */
  declare: string[];
  assign: boolean;
  commands: Command[];
}

/** `{{if}}`, `{{with}}` and `{{range}}`: a list, and the one after `{{else}}`. */
export interface BranchNode extends Span {
  type: 'if' | 'with' | 'range';
  pipeline: Pipeline;
  list: Node[];
  elseList: Node[] | undefined;
}

export type Node =
  | BranchNode
  | (Span &
      (
        | { type: 'text'; text: string }
        | { type: 'action'; pipeline: Pipeline }
        | { type: 'break' | 'continue' }
      ));
