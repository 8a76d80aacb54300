import type { WebSocket } from 'ws';

/**
 * Route selection by `$request.body.action`: the `action` of a JSON object body when it names a
 * route, else `$default` (non-JSON, no action, an action no route has).
 */
export function selectRoute(body: string, routeKeys: readonly string[]): string {
  let action: unknown;
  try {
    action = (JSON.parse(body) as { action?: unknown } | null)?.action;
  } catch {
    return '$default';
  }
  return typeof action === 'string' && routeKeys.includes(action) ? action : '$default';
}

/**
 * Sends a text message in frames of at most `frameBytes`, as API Gateway splits what it sends
 * (its frame limit is 32 KB); a client must reassemble, as it must on AWS.
 */
export function sendInFrames(socket: WebSocket, text: string, frameBytes: number): void {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= frameBytes) {
    socket.send(text);
    return;
  }
  for (let offset = 0; offset < bytes.length; offset += frameBytes) {
    const fin = offset + frameBytes >= bytes.length;
    socket.send(bytes.subarray(offset, offset + frameBytes), { binary: false, fin });
  }
}
