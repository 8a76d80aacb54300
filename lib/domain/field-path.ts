/**
 * How a field of a document, and its value, are named in messages: `spec.template.ports.http`,
 * `metadata.labels["app.kubernetes.io/name"]`, `command[0]`. Shared by the document parser and
 * the store's size check, so both name a field the same way.
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(String(segment)))
      out += `${out ? '.' : ''}${String(segment)}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out || '(document)';
}

/** Shows a value the way the messages quote it: strings in single quotes, the rest as JSON. */
export function showValue(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}
