import type { Fail, Token, TokenKind } from './lexer.ts';
import { characterConstant, numberConstant, unquote, unquoteRaw } from './literals.ts';
import type { Command, Operand, Pipeline } from './nodes.ts';
import { TokenStream } from './token-stream.ts';

const OPERAND_STARTS = new Set<TokenKind>([
  'bool',
  'char',
  'dot',
  'field',
  'identifier',
  'number',
  'nil',
  'rawString',
  'string',
  'variable',
  'leftParen',
]);

/** Words a later stage of a pipeline cannot start with: they take no piped value. */
const NOT_EXECUTABLE = new Set(['bool', 'dot', 'nil', 'number', 'string']);

/**
 * The inside of an action: `$x := cmd arg | cmd`, each command's words, `(...)` and the
 * fields after a term. Functions and variables must exist when the template is read, as Go
 * checks them (`function "x" not defined`, `undefined variable "$x"`).
 */
export class PipelineParser extends TokenStream {
  /** The variables in scope, `$` first; a control structure drops its own at its `{{end}}`. */
  protected readonly vars = ['$'];
  readonly #functions: ReadonlySet<string>;

  constructor(source: string, tokens: Token[], fail: Fail, functions: ReadonlySet<string>) {
    super(source, tokens, fail);
    this.#functions = functions;
  }

  protected pipeline(context: string, close: 'rightDelim' | 'rightParen'): Pipeline {
    const start = this.peekNonSpace();
    const pipeline: Pipeline = {
      pos: start.pos,
      end: start.pos,
      declare: [],
      assign: false,
      commands: [],
    };
    this.#declarations(pipeline, context);
    for (;;) {
      const token = this.nextNonSpace();
      if (token.kind === close) {
        if (pipeline.commands.length === 0) this.fail(token.pos, `missing value for ${context}`);
        pipeline.commands.slice(1).forEach((command, i) => {
          if (NOT_EXECUTABLE.has(command.args[0]?.type ?? '')) {
            this.fail(command.pos, `non executable command in pipeline stage ${i + 2}`);
          }
        });
        pipeline.end = pipeline.commands.at(-1)?.end ?? token.pos;
        return pipeline;
      }
      if (!OPERAND_STARTS.has(token.kind)) this.unexpected(token, context);
      this.backup(token);
      pipeline.commands.push(this.#command());
    }
  }

  /** `$x :=`, `$x =`, and in a range `$i, $e :=`. */
  #declarations(pipeline: Pipeline, context: string): void {
    for (;;) {
      const variable = this.peekNonSpace();
      if (variable.kind !== 'variable') return;
      this.next();
      const next = this.peekNonSpace();
      if (next.kind === 'declare' || next.kind === 'assign') {
        this.next();
        pipeline.assign = next.kind === 'assign';
        if (pipeline.assign) this.#useVariable(variable);
        else this.vars.push(variable.text);
        pipeline.declare.push(variable.text);
        return;
      }
      if (next.kind !== 'comma') {
        this.backup(variable); // an operand, not a declaration
        return;
      }
      this.next();
      pipeline.declare.push(variable.text);
      this.vars.push(variable.text);
      if (context !== 'range' || pipeline.declare.length > 1) {
        this.fail(next.pos, `too many declarations in ${context}`);
      }
      if (this.peekNonSpace().kind !== 'variable') {
        this.fail(this.peek().pos, 'range can only initialize variables');
      }
    }
  }

  #command(): Command {
    const command: Command = { pos: this.peekNonSpace().pos, end: 0, args: [] };
    for (;;) {
      this.peekNonSpace();
      const operand = this.#operand();
      if (operand) command.args.push(operand);
      const token = this.next();
      if (token.kind === 'space') continue;
      if (token.kind === 'rightDelim' || token.kind === 'rightParen') this.backup(token);
      else if (token.kind !== 'pipe') this.unexpected(token, 'operand');
      break;
    }
    const last = command.args.at(-1);
    if (!last) return this.fail(command.pos, 'empty command');
    command.end = last.end;
    return command;
  }

  /** A term and the fields after it: `.a.b`, `$x.a`, `(pipeline).a`. */
  #operand(): Operand | undefined {
    const node = this.#term();
    if (!node || this.peek().kind !== 'field') return node;
    const fields: string[] = [];
    let end = node.end;
    while (this.peek().kind === 'field') {
      const field = this.next();
      fields.push(field.text.slice(1));
      end = field.pos + field.text.length;
    }
    if (node.type === 'field' || node.type === 'variable') {
      return { ...node, fields: [...node.fields, ...fields], end };
    }
    if (node.type === 'function' || node.type === 'pipeline') {
      return { type: 'chain', pos: node.pos, end, node, fields };
    }
    const term = this.source.slice(node.pos, node.end);
    return this.fail(node.pos, `unexpected . after term ${JSON.stringify(term)}`);
  }

  #term(): Operand | undefined {
    const token = this.nextNonSpace();
    const { pos, text } = token;
    const end = pos + text.length;
    const literal = <T>(read: () => T): T => {
      try {
        return read();
      } catch (error) {
        return this.fail(pos, (error as Error).message);
      }
    };
    switch (token.kind) {
      case 'identifier':
        if (!this.#functions.has(text)) this.fail(pos, `function "${text}" not defined`);
        return { type: 'function', pos, end, name: text };
      case 'dot':
        return { type: 'dot', pos, end };
      case 'nil':
        return { type: 'nil', pos, end };
      case 'variable':
        this.#useVariable(token);
        return { type: 'variable', pos, end, name: text, fields: [] };
      case 'field':
        return { type: 'field', pos, end, fields: [text.slice(1)] };
      case 'bool':
        return { type: 'bool', pos, end, value: text === 'true' };
      case 'number':
        return { type: 'number', pos, end, ...literal(() => numberConstant(text)) };
      case 'char':
        return { type: 'number', pos, end, ...literal(() => characterConstant(text)) };
      case 'string':
        return { type: 'string', pos, end, value: literal(() => unquote(text)) };
      case 'rawString':
        return { type: 'string', pos, end, value: unquoteRaw(text) };
      case 'leftParen': {
        const pipeline = this.pipeline('parenthesized pipeline', 'rightParen');
        return { type: 'pipeline', pos, end: this.previous().pos + 1, pipeline };
      }
    }
    this.backup(token);
    return undefined;
  }

  #useVariable(token: Token): void {
    if (!this.vars.includes(token.text)) this.fail(token.pos, `undefined variable "${token.text}"`);
  }
}
