import { Evaluator } from './evaluate.ts';
import { formatValue } from './format-verb.ts';
import type { BranchNode, Node } from './nodes.ts';
import { isInt, isMap, sortedKeys, truth, type Value } from './values.ts';

/**
 * Runs a parsed template on data as Go's text/template executes it: text is copied, an
 * action prints its value (`<no value>` for a missing key), `if` and `with` take Go's truth,
 * `range` visits lists in order, maps in sorted key order and 0..n-1 of a number n. Dot (`.`)
 * starts as the data; variables live until the `{{end}}` of the structure that declared them.
 */
export function execute(nodes: Node[], data: Value, source: string, name: string): string {
  const state = new State(source, name, data);
  state.walk(data, nodes);
  return state.out.join('');
}

/** Thrown by `{{break}}` and `{{continue}}` to the range around them. */
const BREAK = Symbol('break');
const CONTINUE = Symbol('continue');

class State extends Evaluator {
  readonly out: string[] = [];

  walk(dot: Value, nodes: readonly Node[]): void {
    for (const node of nodes) {
      if (node.type === 'text') this.out.push(node.text);
      else if (node.type === 'action') {
        const value = this.pipeline(dot, node.pipeline);
        if (node.pipeline.declare.length === 0) {
          this.out.push(value === undefined || value === null ? '<no value>' : formatValue(value));
        }
      } else if (node.type === 'if' || node.type === 'with') {
        const mark = this.vars.length;
        try {
          const value = this.pipeline(dot, node.pipeline);
          if (truth(value)) this.walk(node.type === 'with' ? value : dot, node.list);
          else if (node.elseList) this.walk(dot, node.elseList);
        } finally {
          this.vars.length = mark;
        }
      } else if (node.type === 'range') this.#range(dot, node);
      else throw node.type === 'break' ? BREAK : CONTINUE;
    }
  }

  #range(dot: Value, node: BranchNode): void {
    const { pipeline } = node;
    const mark = this.vars.length;
    const value = this.commands(dot, pipeline);
    const names = pipeline.declare;
    const declared = this.vars.length;
    if (!pipeline.assign) for (const name of names) this.vars.push({ name, value });
    const scope = this.vars.length;
    const set = (i: number, item: Value) => {
      const name = names[i] as string;
      if (pipeline.assign) this.assign(name, item);
      else (this.vars[declared + i] as { value: Value }).value = item;
    };
    /** One pass of the body; false when it ran {{break}}. */
    const once = (key: Value, item: Value): boolean => {
      if (names.length === 1) set(0, item);
      if (names.length === 2) {
        set(0, key);
        set(1, item);
      }
      try {
        this.walk(item, node.list);
      } catch (signal) {
        if (signal === BREAK) return false;
        if (signal !== CONTINUE) throw signal;
      } finally {
        this.vars.length = scope;
      }
      return true;
    };
    let ran = false;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length && once(i, value[i]); i++);
      ran = value.length > 0;
    } else if (isMap(value)) {
      const keys = sortedKeys(value);
      for (let i = 0; i < keys.length && once(keys[i], value[keys[i] as string]); i++);
      ran = keys.length > 0;
    } else if (typeof value === 'number' && isInt(value)) {
      if (names.length > 1) {
        this.fail(pipeline, `can't use ${value} to iterate over more than one variable`);
      }
      for (let i = 0; i < value && once(i, i); i++);
      ran = value > 0;
    } else if (value !== undefined && value !== null) {
      this.fail(pipeline, `range can't iterate over ${formatValue(value)}`);
    }
    if (!ran && node.elseList) this.walk(dot, node.elseList);
    this.vars.length = mark;
  }
}
