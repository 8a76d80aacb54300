/**
 * The two patch formats `kubectl patch` takes for custom resources (`--type merge`, RFC 7386;
 * `--type json`, RFC 6902), on plain JSON values. Written here rather than taken from a
 * package: about 80 lines, no dependency for the CLI package to ship, and every error names
 * the operation and the path. Pure: the input is never changed; a failed patch throws
 * PatchError and nothing is written.
 */

export class PatchError extends Error {}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** RFC 7386: objects merge key by key, `null` removes a key, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

interface Operation {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

/** RFC 6902: add, remove, replace, move, copy, test, applied in order to a copy. */
export function jsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) {
    throw new PatchError(
      'a JSON patch is a list of operations, e.g. [{"op":"add","path":"/metadata/labels/team","value":"a"}]',
    );
  }
  let doc = structuredClone(target) as Json;
  operations.forEach((raw, index) => {
    const at = `operation ${index + 1}`;
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string') {
      throw new PatchError(`${at}: needs "op" and "path" (strings), got ${JSON.stringify(raw)}`);
    }
    const operation = raw as unknown as Operation;
    const needsValue = ['add', 'replace', 'test'].includes(operation.op);
    if (needsValue && !('value' in raw))
      throw new PatchError(`${at} (${operation.op} ${operation.path}): needs "value"`);
    switch (operation.op) {
      case 'add':
        doc = put(doc, operation.path, operation.value as Json, 'add', at);
        break;
      case 'remove':
        doc = take(doc, operation.path, at).doc;
        break;
      case 'replace':
        take(doc, operation.path, at);
        doc = put(doc, operation.path, operation.value as Json, 'replace', at);
        break;
      case 'move':
      case 'copy': {
        if (typeof operation.from !== 'string')
          throw new PatchError(`${at} (${operation.op}): needs "from"`);
        const value = structuredClone(read(doc, operation.from, at));
        if (operation.op === 'move') doc = take(doc, operation.from, at).doc;
        doc = put(doc, operation.path, value, 'add', at);
        break;
      }
      case 'test':
        if (JSON.stringify(read(doc, operation.path, at)) !== JSON.stringify(operation.value)) {
          throw new PatchError(
            `${at}: test of ${operation.path} failed: it is ${JSON.stringify(read(doc, operation.path, at))}`,
          );
        }
        break;
      default:
        throw new PatchError(
          `${at}: unknown op '${operation.op}'; use add, remove, replace, move, copy or test`,
        );
    }
  });
  return doc;
}

/** RFC 6901: `/a/b~1c` is ["a", "b/c"]; "" is the whole document. */
function tokens(pointer: string, at: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/'))
    throw new PatchError(`${at}: path '${pointer}' must start with '/'`);
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function read(doc: Json, pointer: string, at: string): Json {
  let node: Json = doc;
  for (const token of tokens(pointer, at)) {
    const next: Json | undefined = Array.isArray(node)
      ? node[indexOf(node, token, false, pointer, at)]
      : isObject(node) && Object.hasOwn(node, token)
        ? (node as Record<string, Json>)[token]
        : undefined;
    if (next === undefined) throw new PatchError(`${at}: path '${pointer}' does not exist`);
    node = next;
  }
  return node;
}

function put(doc: Json, pointer: string, value: Json, op: 'add' | 'replace', at: string): Json {
  const path = tokens(pointer, at);
  const last = path.pop();
  if (last === undefined) return value;
  const parent = read(doc, `/${path.map(escapeToken).join('/')}`.replace(/^\/$/, ''), at);
  if (Array.isArray(parent)) {
    const index =
      last === '-' && op === 'add'
        ? parent.length
        : indexOf(parent, last, op === 'add', pointer, at);
    if (op === 'add') parent.splice(index, 0, value);
    else parent[index] = value;
  } else if (isObject(parent)) (parent as Record<string, Json>)[last] = value;
  else throw new PatchError(`${at}: the parent of '${pointer}' is not an object or a list`);
  return doc;
}

function take(doc: Json, pointer: string, at: string): { doc: Json; value: Json } {
  const value = read(doc, pointer, at);
  const path = tokens(pointer, at);
  const last = path.pop();
  if (last === undefined) throw new PatchError(`${at}: cannot remove the whole object`);
  const parent = read(doc, `/${path.map(escapeToken).join('/')}`.replace(/^\/$/, ''), at);
  if (Array.isArray(parent)) parent.splice(indexOf(parent, last, false, pointer, at), 1);
  else delete (parent as Record<string, Json>)[last];
  return { doc, value };
}

function indexOf(list: Json[], token: string, end: boolean, pointer: string, at: string): number {
  const index = /^(0|[1-9]\d*)$/.test(token) ? Number(token) : Number.NaN;
  if (Number.isNaN(index) || index > list.length || (!end && index === list.length)) {
    throw new PatchError(
      `${at}: '${token}' in '${pointer}' is not an index of a list of ${list.length}`,
    );
  }
  return index;
}

function escapeToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
