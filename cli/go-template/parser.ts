import { parseError } from './errors.ts';
import { type Fail, lex, type Token } from './lexer.ts';
import type { BranchNode, Node } from './nodes.ts';
import { PipelineParser } from './pipeline-parser.ts';

/**
 * Reads a template as Go's text/template/parse does: text and actions, `{{if}}`, `{{with}}`
 * and `{{range}}` with their `{{else}}` and `{{end}}` (`{{else if}}` and `{{else with}}`
 * share their chain's `{{end}}`), `{{break}}`/`{{continue}}` inside a `{{range}}`.
 * `define`, `template` and `block` (named templates) are refused.
 */
export function parse(source: string, name: string, functions: ReadonlySet<string>): Node[] {
  const fail: Fail = (pos, message) => {
    throw parseError(name, source, pos, message);
  };
  return new Parser(source, lex(source, fail), fail, functions).template();
}

/** `{{end}}` and `{{else}}` end a list; `chained` is the `if` or `with` of `{{else if}}`. */
type Ending = { type: 'end'; pos: number } | { type: 'else'; pos: number; chained?: string };

class Parser extends PipelineParser {
  #rangeDepth = 0;

  template(): Node[] {
    const nodes: Node[] = [];
    while (this.peekNonSpace().kind !== 'eof') {
      const node = this.#textOrAction();
      if (node.type === 'end' || node.type === 'else') {
        this.fail(node.pos, `unexpected {{${node.type}}}`);
      }
      nodes.push(node);
    }
    return nodes;
  }

  #textOrAction(): Node | Ending {
    const token = this.nextNonSpace();
    const end = token.pos + token.text.length;
    if (token.kind === 'text') return { type: 'text', pos: token.pos, end, text: token.text };
    if (token.kind !== 'leftDelim') return this.unexpected(token, 'input');
    const first = this.nextNonSpace();
    if (first.kind === 'keyword') return this.#keyword(first);
    this.backup(first);
    const pipeline = this.pipeline('command', 'rightDelim');
    return { type: 'action', pos: pipeline.pos, end: pipeline.end, pipeline };
  }

  #keyword(token: Token): Node | Ending {
    const { text: word, pos } = token;
    if (word === 'if' || word === 'with' || word === 'range') return this.#control(token);
    if (word === 'end') {
      this.expectClose('end');
      return { type: 'end', pos };
    }
    if (word === 'else') {
      const next = this.peekNonSpace();
      if (next.kind === 'keyword' && (next.text === 'if' || next.text === 'with')) {
        return { type: 'else', pos, chained: next.text };
      }
      this.expectClose('else');
      return { type: 'else', pos };
    }
    if (word === 'break' || word === 'continue') {
      if (this.#rangeDepth === 0) this.fail(pos, `{{${word}}} outside {{range}}`);
      this.expectClose(word);
      return { type: word, pos, end: pos + word.length };
    }
    return this.fail(pos, `{{${word}}} is not supported: named templates cannot be used here`);
  }

  /** `{{if|with|range PIPELINE}} LIST [{{else}} LIST] {{end}}`, and `{{else if ...}}` chains. */
  #control(keyword: Token): BranchNode {
    const type = keyword.text as BranchNode['type'];
    const scope = this.vars.length;
    const pipeline = this.pipeline(type, 'rightDelim');
    if (type === 'range') this.#rangeDepth++;
    const [list, ending] = this.#list();
    if (type === 'range') this.#rangeDepth--;
    let elseList: Node[] | undefined;
    if (ending.type === 'else' && ending.chained !== undefined) {
      if (ending.chained !== type) {
        this.fail(ending.pos, `{{else ${ending.chained}}} cannot end a {{${type}}}`);
      }
      elseList = [this.#control(this.nextNonSpace())];
    } else if (ending.type === 'else') {
      const [rest, last] = this.#list();
      if (last.type !== 'end') this.fail(last.pos, 'expected end; found {{else}}');
      elseList = rest;
    }
    this.vars.length = scope;
    return { type, pos: pipeline.pos, end: pipeline.end, pipeline, list, elseList };
  }

  #list(): [Node[], Ending] {
    const list: Node[] = [];
    while (this.peekNonSpace().kind !== 'eof') {
      const node = this.#textOrAction();
      if (node.type === 'end' || node.type === 'else') return [list, node];
      list.push(node);
    }
    return this.fail(this.peek().pos, 'unexpected EOF');
  }
}
