import { entryName } from '../domain/entry-name.ts';
import type { ConnectRequest, ObjectRef } from '../domain/model.ts';
import type { AuthorizerContext } from './websocket-events.ts';

/**
 * The connection carries its entry: the REQUEST authorizer sees the connect query, names the
 * entry the connect will register, and puts it in its context. API Gateway repeats that
 * context on every later event of the connection, so `$disconnect` and messages know the
 * entry without a read, and `$connect` needs no second write to record it.
 */
const KEYS = { namespace: 'entryNamespace', name: 'entryName' } as const;

/** The entry a valid connect request registers (rule 4's name). */
export function requestedEntry(request: ConnectRequest): ObjectRef {
  const [firstIp] = request.ips;
  if (firstIp === undefined) throw new RangeError('a connect request carries at least one ip');
  return { namespace: request.namespace, name: entryName(request.group, firstIp, request.network) };
}

export function carriedEntryContext(entry: ObjectRef): Record<string, string> {
  return { [KEYS.namespace]: entry.namespace, [KEYS.name]: entry.name };
}

/** The entry the authorizer named, if it did (token mode); values are strings on the wire. */
export function carriedEntry(
  authorizer: AuthorizerContext | null | undefined,
): ObjectRef | undefined {
  const namespace = authorizer?.[KEYS.namespace];
  const name = authorizer?.[KEYS.name];
  if (typeof namespace !== 'string' || typeof name !== 'string' || !namespace || !name) {
    return undefined;
  }
  return { namespace, name };
}
