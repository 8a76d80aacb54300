import { errorContext, GoTemplateError, location } from './errors.ts';
import { BUILTINS } from './functions.ts';
import type { Command, Operand, Pipeline, Span } from './nodes.ts';
import { goType, isMap, truth, type Value } from './values.ts';

/** No value was piped into a command (Go's `missingVal`). */
const NONE = Symbol('none');
type Final = Value | typeof NONE;

/**
 * The values of pipelines, as Go's text/template evaluates them: a command's first word is a
 * function, a field chain or a value; each command's value is the next one's last argument.
 * With kubectl's `--allow-missing-template-keys` default, a missing map key is "no value"
 * (and so are fields of it), while a field of nil or of a string is an error.
 */
export class Evaluator {
  /** The variables in scope, innermost last; `$` is the data throughout. */
  protected readonly vars: { name: string; value: Value }[];
  protected readonly source: string;
  readonly #name: string;

  constructor(source: string, name: string, data: Value) {
    this.source = source;
    this.#name = name;
    this.vars = [{ name: '$', value: data }];
  }

  /** `template: output:1:15: executing "output" at <.a.b>: message`, as Go words it. */
  protected fail(node: Span, message: string): never {
    const at = errorContext(this.source.slice(node.pos, node.end));
    const where = location(this.#name, this.source, node.pos);
    throw new GoTemplateError(
      'exec',
      `template: ${where}: executing "${this.#name}" at <${at}>: ${message}`,
    );
  }

  /** The pipeline's value; its variables are declared or set. */
  protected pipeline(dot: Value, pipeline: Pipeline): Value {
    const value = this.commands(dot, pipeline);
    for (const name of pipeline.declare) {
      if (pipeline.assign) this.assign(name, value);
      else this.vars.push({ name, value });
    }
    return value;
  }

  protected commands(dot: Value, pipeline: Pipeline): Value {
    let value: Final = NONE;
    for (const command of pipeline.commands) {
      value = this.#command(dot, command, value);
      // A nil inside the data is "no value" once it is a pipeline's result, as in Go.
      if (value === null) value = undefined;
    }
    return value === NONE ? undefined : value;
  }

  #command(dot: Value, command: Command, final: Final): Value {
    const first = command.args[0] as Operand;
    const args = command.args;
    switch (first.type) {
      case 'field':
        return this.#fields(dot, first, first.fields, args, final);
      case 'chain':
        return this.#fields(this.#arg(dot, first.node), first, first.fields, args, final);
      case 'variable':
        if (first.fields.length > 0) {
          return this.#fields(this.#variable(first), first, first.fields, args, final);
        }
        break;
      case 'function':
        return this.#call(dot, first, command, args.slice(1), final);
      case 'nil':
        return this.fail(first, 'nil is not a command');
    }
    if (args.length > 1 || final !== NONE) {
      const word = this.source.slice(first.pos, first.end);
      this.fail(first, `can't give argument to non-function ${word}`);
    }
    return this.#arg(dot, first);
  }

  /** `.a.b.c` from `receiver`; only the last field could take arguments, and none does. */
  #fields(receiver: Value, node: Span, fields: string[], args: Operand[], final: Final): Value {
    let value = receiver;
    fields.forEach((field, i) => {
      const hasArgs = i === fields.length - 1 && (args.length > 1 || final !== NONE);
      if (value === undefined) return;
      if (value === null) this.fail(node, `nil pointer evaluating interface {}.${field}`);
      if (!isMap(value)) this.fail(node, `can't evaluate field ${field} in type ${goType(value)}`);
      if (hasArgs) this.fail(node, `${field} is not a method but has arguments`);
      value = Object.hasOwn(value, field) ? value[field] : undefined;
    });
    return value;
  }

  #variable(node: Extract<Operand, { type: 'variable' }>): Value {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      const variable = this.vars[i] as { name: string; value: Value };
      if (variable.name === node.name) return variable.value;
    }
    return this.fail(node, `undefined variable: ${node.name}`);
  }

  protected assign(name: string, value: Value): void {
    const variable = this.vars.findLast((v) => v.name === name);
    if (variable) variable.value = value;
  }

  /** An argument's value. */
  #arg(dot: Value, node: Operand): Value {
    switch (node.type) {
      case 'dot':
        return dot;
      case 'nil':
        return null;
      case 'bool':
      case 'number':
      case 'string':
        return node.value;
      case 'field':
        return this.#fields(dot, node, node.fields, [node], NONE);
      case 'variable':
        return this.#fields(this.#variable(node), node, node.fields, [node], NONE);
      case 'chain':
        return this.#fields(this.#arg(dot, node.node), node, node.fields, [node], NONE);
      case 'pipeline':
        return this.pipeline(dot, node.pipeline);
      case 'function':
        return this.#call(dot, node, node, [], NONE);
    }
  }

  #call(
    dot: Value,
    fn: Span & { name: string },
    at: Span,
    argNodes: Operand[],
    final: Final,
  ): Value {
    const count = argNodes.length + (final === NONE ? 0 : 1);
    const builtin = BUILTINS[fn.name];
    const min = builtin?.min ?? 1;
    const max = builtin?.max;
    if (count < min || (max !== undefined && count > max)) {
      const want = max === min ? `${min}` : `at least ${min}`;
      this.fail(fn, `wrong number of args for ${fn.name}: want ${want} got ${count}`);
    }
    if (!builtin) {
      // and, or: the first argument that decides, evaluated no further (Go 1.18).
      const or = fn.name === 'or';
      let value: Value;
      for (const node of argNodes) {
        value = this.#arg(dot, node);
        if (truth(value) === or) return value;
      }
      return final === NONE ? value : final;
    }
    const args = argNodes.map((node) => this.#arg(dot, node));
    if (final !== NONE) args.push(final);
    args.slice(0, builtin.strings ?? 0).forEach((arg) => {
      if (arg === undefined || arg === null) this.fail(fn, 'invalid value; expected string');
      if (typeof arg !== 'string') {
        this.fail(fn, `wrong type for value; expected string; got ${goType(arg)}`);
      }
    });
    try {
      return builtin.call(args.map((arg) => (arg === undefined ? null : arg)));
    } catch (error) {
      return this.fail(at, `error calling ${fn.name}: ${(error as Error).message}`);
    }
  }
}
