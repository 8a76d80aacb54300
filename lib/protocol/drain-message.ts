import { InvalidMessageError, MAX_MESSAGE_BYTES, MESSAGE_ERROR_CODES } from './agent-messages.ts';

/**
 * `{"action":"drain"}`: the agent's VM is shutting down (SIGTERM). Kept beside the other
 * messages of protocol v1 rather than in their union: the message handler asks this first,
 * and everything else goes to `parseAgentMessage` unchanged.
 */
export interface DrainMessage {
  action: 'drain';
}

export interface DrainAck {
  action: 'drain';
  ok: true;
}

export function drainAck(): DrainAck {
  return { action: 'drain', ok: true };
}

/** The drain message in this body, or undefined when the body is anything else. */
export function parseDrainMessage(
  body: string | null | undefined,
  isBase64Encoded = false,
): DrainMessage | undefined {
  const text = isBase64Encoded ? Buffer.from(body ?? '', 'base64').toString('utf8') : (body ?? '');
  // Oversized or not JSON: parseAgentMessage says what is wrong with it.
  if (Buffer.byteLength(text, 'utf8') > MAX_MESSAGE_BYTES) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const fields = json as Record<string, unknown>;
  if (fields.action !== 'drain') return undefined;
  const extra = Object.keys(fields).filter((key) => key !== 'action');
  if (extra.length > 0) {
    throw new InvalidMessageError(
      `invalid drain message: unexpected field '${extra[0]}'; send {"action":"drain"}`,
      MESSAGE_ERROR_CODES.invalid,
    );
  }
  return { action: 'drain' };
}
