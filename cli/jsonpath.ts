/**
 * `-o jsonpath=TEMPLATE` as kubectl reads it (client-go's `util/jsonpath`): text with
 * `{expression}` actions, `{range EXPR}...{end}` and string literals such as `{"\n"}`.
 * Expressions: `$` or `@`, `.field` (a `\.` inside a field is a dot:
 * `{.metadata.annotations.istio\.io/connectedAt}`), `['field']`, `..field` (recursive),
 * `*` and `[*]`, `[n]` (negative from the end), `[start:end]`, and filters
 * `[?(@.path == "value")]` with `== != < <= > >=` or `[?(@.path)]`. Missing fields print
 * nothing, as with kubectl's default `--allow-missing-template-keys=true`.
 */

export class JsonPathError extends Error {}

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'print'; path: Path }
  | { kind: 'range'; path: Path; body: Node[] };

type Segment =
  | { kind: 'field'; name: string }
  | { kind: 'recursive'; name: string | '*' }
  | { kind: 'wildcard' }
  | { kind: 'index'; index: number }
  | { kind: 'slice'; start?: number; end?: number; step?: number }
  | { kind: 'filter'; left: Operand; op?: Comparison; right?: Operand };

type Comparison = '==' | '!=' | '<' | '<=' | '>' | '>=';
type Operand = { kind: 'path'; path: Path } | { kind: 'literal'; value: unknown };

interface Path {
  root: '$' | '@';
  segments: Segment[];
}

export interface JsonPathTemplate {
  source: string;
  nodes: Node[];
}

export function parseJsonPathTemplate(source: string): JsonPathTemplate {
  const actions = splitActions(source);
  const stack: { nodes: Node[] }[] = [{ nodes: [] }];
  for (const action of actions) {
    const top = stack[stack.length - 1] as { nodes: Node[] };
    if (action.kind === 'text') {
      if (action.text !== '') top.nodes.push({ kind: 'text', text: action.text });
      continue;
    }
    const body = action.text.trim();
    if (body === 'end') {
      if (stack.length === 1) throw new JsonPathError(`{end} without a {range ...}`);
      stack.pop();
      continue;
    }
    if (body.startsWith('range ') || body === 'range') {
      const range: Node = { kind: 'range', path: parsePath(body.slice(5).trim()), body: [] };
      top.nodes.push(range);
      stack.push({ nodes: range.body });
      continue;
    }
    if (body.startsWith('"') || body.startsWith("'")) {
      top.nodes.push({ kind: 'text', text: parseStringLiteral(body) });
      continue;
    }
    top.nodes.push({ kind: 'print', path: parsePath(body) });
  }
  if (stack.length > 1) throw new JsonPathError('{range ...} without its {end}');
  return { source, nodes: stack[0]?.nodes ?? [] };
}

export function executeJsonPath(template: JsonPathTemplate, data: unknown): string {
  return run(template.nodes, data, data);
}

function run(nodes: Node[], root: unknown, current: unknown): string {
  let out = '';
  for (const node of nodes) {
    if (node.kind === 'text') out += node.text;
    else if (node.kind === 'print') out += evaluate(node.path, root, current).map(show).join(' ');
    else for (const item of evaluate(node.path, root, current)) out += run(node.body, root, item);
  }
  return out;
}

function show(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Splits `text{action}text` into its parts; braces inside quoted strings do not count. */
function splitActions(source: string): { kind: 'text' | 'action'; text: string }[] {
  const parts: { kind: 'text' | 'action'; text: string }[] = [];
  let at = 0;
  while (at < source.length) {
    const open = source.indexOf('{', at);
    if (open === -1) {
      parts.push({ kind: 'text', text: source.slice(at) });
      break;
    }
    parts.push({ kind: 'text', text: source.slice(at, open) });
    let quote: string | undefined;
    let close = -1;
    for (let i = open + 1; i < source.length; i++) {
      const c = source[i];
      if (quote) {
        if (c === '\\') i++;
        else if (c === quote) quote = undefined;
      } else if (c === '"' || c === "'") quote = c;
      else if (c === '}') {
        close = i;
        break;
      }
    }
    if (close === -1)
      throw new JsonPathError(`unclosed action starting at '${source.slice(open)}'`);
    parts.push({ kind: 'action', text: source.slice(open + 1, close) });
    at = close + 1;
  }
  return parts;
}

function parseStringLiteral(text: string): string {
  const quote = text[0];
  if (text.length < 2 || text[text.length - 1] !== quote) {
    throw new JsonPathError(`unterminated string ${text}`);
  }
  const body = text.slice(1, -1);
  if (quote === "'") return body;
  try {
    return JSON.parse(`"${body}"`) as string;
  } catch {
    throw new JsonPathError(`invalid string ${text}`);
  }
}

/** A small cursor over one expression. */
class Cursor {
  at = 0;
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  peek(n = 0): string {
    return this.text[this.at + n] ?? '';
  }
  done(): boolean {
    return this.at >= this.text.length;
  }
  fail(message: string): never {
    throw new JsonPathError(`${message} at position ${this.at + 1} of '${this.text}'`);
  }
}

function parsePath(text: string): Path {
  const cursor = new Cursor(text.trim());
  const path = readPath(cursor);
  if (!cursor.done()) cursor.fail(`unexpected '${cursor.peek()}'`);
  return path;
}

const FIELD_END = new Set(['.', '[', ']', ' ', '(', ')', '=', '!', '<', '>', ',', '"', "'"]);

function readPath(cursor: Cursor): Path {
  let root: Path['root'] = '@';
  if (cursor.peek() === '$' || cursor.peek() === '@') {
    root = cursor.peek() as Path['root'];
    cursor.at++;
  }
  const segments: Segment[] = [];
  while (!cursor.done()) {
    const c = cursor.peek();
    if (c === '.' && cursor.peek(1) === '.') {
      cursor.at += 2;
      if (cursor.peek() === '*') {
        cursor.at++;
        segments.push({ kind: 'recursive', name: '*' });
      } else {
        const name = readField(cursor);
        if (name === '') cursor.fail("'..' must be followed by a field name");
        segments.push({ kind: 'recursive', name });
      }
    } else if (c === '.') {
      cursor.at++;
      if (cursor.peek() === '*') {
        cursor.at++;
        segments.push({ kind: 'wildcard' });
      } else {
        // `{.}` is the current object itself.
        const name = readField(cursor);
        if (name !== '') segments.push({ kind: 'field', name });
      }
    } else if (c === '[') {
      cursor.at++;
      segments.push(readBracket(cursor));
    } else break;
  }
  return { root, segments };
}

function readField(cursor: Cursor): string {
  let name = '';
  while (!cursor.done()) {
    const c = cursor.peek();
    if (c === '\\' && cursor.peek(1) === '.') {
      name += '.';
      cursor.at += 2;
      continue;
    }
    if (FIELD_END.has(c)) break;
    name += c;
    cursor.at++;
  }
  return name;
}

function readBracket(cursor: Cursor): Segment {
  skipSpaces(cursor);
  let segment: Segment;
  if (cursor.peek() === '*') {
    cursor.at++;
    segment = { kind: 'wildcard' };
  } else if (cursor.peek() === '"' || cursor.peek() === "'") {
    segment = { kind: 'field', name: readQuoted(cursor) };
  } else if (cursor.peek() === '?') {
    cursor.at++;
    if (cursor.peek() !== '(') cursor.fail('a filter is written [?(...)]');
    cursor.at++;
    segment = readFilter(cursor);
    skipSpaces(cursor);
    if (cursor.peek() !== ')') cursor.fail('a filter is written [?(...)]');
    cursor.at++;
  } else {
    const numbers: (number | undefined)[] = [readInteger(cursor)];
    while (cursor.peek() === ':') {
      cursor.at++;
      numbers.push(readInteger(cursor));
    }
    if (numbers.length === 1) {
      const [index] = numbers;
      if (index === undefined) cursor.fail("expected '*', an index, a slice, a 'name' or a filter");
      segment = { kind: 'index', index };
    } else if (numbers.length <= 3) {
      const [start, end, step] = numbers;
      segment = { kind: 'slice', ...defined({ start, end, step }) };
    } else cursor.fail('a slice is [start:end:step]');
  }
  skipSpaces(cursor);
  if (cursor.peek() === ',') cursor.fail('unions ([a,b]) are not supported');
  if (cursor.peek() !== ']') cursor.fail("expected ']'");
  cursor.at++;
  return segment;
}

function defined<T extends Record<string, number | undefined>>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function readInteger(cursor: Cursor): number | undefined {
  skipSpaces(cursor);
  const match = /^-?\d+/.exec(cursor.text.slice(cursor.at));
  if (!match) return undefined;
  cursor.at += match[0].length;
  skipSpaces(cursor);
  return Number(match[0]);
}

function readQuoted(cursor: Cursor): string {
  const quote = cursor.peek();
  const start = cursor.at;
  cursor.at++;
  while (!cursor.done() && cursor.peek() !== quote) cursor.at += cursor.peek() === '\\' ? 2 : 1;
  if (cursor.done()) cursor.fail('unterminated string');
  cursor.at++;
  return parseStringLiteral(cursor.text.slice(start, cursor.at));
}

function readFilter(cursor: Cursor): Segment {
  const left = readOperand(cursor);
  skipSpaces(cursor);
  const op = /^(==|!=|<=|>=|<|>)/.exec(cursor.text.slice(cursor.at))?.[0] as Comparison | undefined;
  if (op === undefined) return { kind: 'filter', left };
  cursor.at += op.length;
  return { kind: 'filter', left, op, right: readOperand(cursor) };
}

function readOperand(cursor: Cursor): Operand {
  skipSpaces(cursor);
  const c = cursor.peek();
  if (c === '@' || c === '$') return { kind: 'path', path: readPath(cursor) };
  if (c === '"' || c === "'") return { kind: 'literal', value: readQuoted(cursor) };
  const match = /^(-?\d+(\.\d+)?|true|false|null)/.exec(cursor.text.slice(cursor.at));
  if (!match) cursor.fail('expected @.path, a number or a quoted string in the filter');
  cursor.at += match[0].length;
  return { kind: 'literal', value: JSON.parse(match[0]) };
}

function skipSpaces(cursor: Cursor): void {
  while (cursor.peek() === ' ') cursor.at++;
}

function evaluate(path: Path, root: unknown, current: unknown): unknown[] {
  let values = [path.root === '$' ? root : current];
  for (const segment of path.segments) {
    values = values.flatMap((value) => step(segment, value, root));
  }
  return values;
}

function step(segment: Segment, value: unknown, root: unknown): unknown[] {
  switch (segment.kind) {
    case 'field':
      return isObject(value) && Object.hasOwn(value, segment.name) ? [value[segment.name]] : [];
    case 'wildcard':
      return Array.isArray(value) ? value : isObject(value) ? Object.values(value) : [];
    case 'recursive':
      return descendants(value).flatMap((node) => {
        if (segment.name === '*')
          return Array.isArray(node) ? node : isObject(node) ? Object.values(node) : [];
        return isObject(node) && Object.hasOwn(node, segment.name) ? [node[segment.name]] : [];
      });
    case 'index': {
      if (!Array.isArray(value)) return [];
      const index = segment.index < 0 ? value.length + segment.index : segment.index;
      return index >= 0 && index < value.length ? [value[index]] : [];
    }
    case 'slice': {
      if (!Array.isArray(value)) return [];
      const result: unknown[] = [];
      const stepBy = segment.step ?? 1;
      if (stepBy <= 0) return [];
      const clamp = (n: number) =>
        Math.min(Math.max(n < 0 ? value.length + n : n, 0), value.length);
      for (let i = clamp(segment.start ?? 0); i < clamp(segment.end ?? value.length); i += stepBy) {
        result.push(value[i]);
      }
      return result;
    }
    case 'filter':
      return (Array.isArray(value) ? value : []).filter((item) => holds(segment, item, root));
  }
}

function descendants(value: unknown): unknown[] {
  const children = Array.isArray(value) ? value : isObject(value) ? Object.values(value) : [];
  return [value, ...children.flatMap(descendants)];
}

function holds(
  filter: Extract<Segment, { kind: 'filter' }>,
  item: unknown,
  root: unknown,
): boolean {
  const left = operandValues(filter.left, item, root);
  if (filter.op === undefined || filter.right === undefined) return left.length > 0;
  const right = operandValues(filter.right, item, root);
  const op = filter.op;
  return left.some((a) => right.some((b) => compare(a, op, b)));
}

function operandValues(operand: Operand, item: unknown, root: unknown): unknown[] {
  return operand.kind === 'literal' ? [operand.value] : evaluate(operand.path, root, item);
}

function compare(a: unknown, op: Comparison, b: unknown): boolean {
  switch (op) {
    case '==':
      return a === b;
    case '!=':
      return a !== b;
  }
  if (typeof a !== typeof b || (typeof a !== 'number' && typeof a !== 'string')) return false;
  const [x, y] = [a as number | string, b as number | string];
  return op === '<' ? x < y : op === '<=' ? x <= y : op === '>' ? x > y : x >= y;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * One expression as `--sort-by` and `-o custom-columns` take it, relaxed as kubectl's
 * `RelaxedJSONPathExpression`: `{.spec.address}`, `.spec.address` or `spec.address`.
 */
export function parseJsonPathExpression(source: string): JsonPathTemplate {
  const text = source.trim();
  const inner = text.startsWith('{') && text.endsWith('}') ? text.slice(1, -1).trim() : text;
  if (inner === '') throw new JsonPathError(`empty expression '${source}'`);
  const path =
    inner.startsWith('.') || inner.startsWith('$') || inner.startsWith('[') ? inner : `.${inner}`;
  return { source, nodes: [{ kind: 'print', path: parsePath(path) }] };
}

/** The values an expression of `parseJsonPathExpression` finds in `data` (none when missing). */
export function jsonPathValues(expression: JsonPathTemplate, data: unknown): unknown[] {
  const [node] = expression.nodes;
  if (expression.nodes.length !== 1 || node?.kind !== 'print') {
    throw new JsonPathError(`'${expression.source}' is not one expression`);
  }
  return evaluate(node.path, data, data);
}
