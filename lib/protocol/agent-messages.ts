import * as z from 'zod';
import { InvalidRequestError } from '../domain/errors.ts';
import { type SidecarMessage, sidecarMessage } from './sidecar-message.ts';

/**
 * Agent protocol v1 messages: JSON objects with an `action`. API Gateway routes on
 * `body.action`; anything it cannot route (non-JSON, unknown action) reaches `$default`,
 * and this parser turns it into an error reply the agent can act on.
 */

/** 32 KB: API Gateway's WebSocket frame size; a health report is a few hundred bytes. */
export const MAX_MESSAGE_BYTES = 32 * 1024;
/** A health message is a short reason; the condition message must stay readable. */
export const MAX_HEALTH_MESSAGE_LENGTH = 1024;

export const MESSAGE_ERROR_CODES = {
  tooLarge: 'MessageTooLarge',
  notJson: 'InvalidJson',
  unknownAction: 'UnknownAction',
  invalid: 'InvalidMessage',
} as const;

export type MessageErrorCode = (typeof MESSAGE_ERROR_CODES)[keyof typeof MESSAGE_ERROR_CODES];

/** A 400 with a code that tells the agent which of its messages was wrong and how. */
export class InvalidMessageError extends InvalidRequestError {
  override readonly code: MessageErrorCode;

  constructor(message: string, code: MessageErrorCode) {
    super(message, 'body');
    this.code = code;
  }
}

const healthMessage = z.object({
  action: z.literal('health'),
  healthy: z.boolean({ error: "'healthy' must be true or false" }),
  message: z
    .string({ error: "'message' must be a string" })
    .max(
      MAX_HEALTH_MESSAGE_LENGTH,
      `'message' must be at most ${MAX_HEALTH_MESSAGE_LENGTH} characters`,
    )
    .optional(),
});

const describeMessage = z.object({ action: z.literal('describe') });

// Answered by API Gateway's mock integration in AWS; answered here when a gateway forwards it.
const pingMessage = z.object({ action: z.literal('ping') });

/**
 * `{"action":"drain"}`: the VM is shutting down (the agent got SIGTERM). Nothing else may come
 * with it: a field the registrar does not know would be ignored where the agent meant it.
 */
const drainMessage = z.strictObject(
  { action: z.literal('drain') },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unexpected field '${issue.keys[0]}'; send {"action":"drain"}`
        : undefined,
  },
);

export type HealthMessage = z.infer<typeof healthMessage>;
export type DescribeMessage = z.infer<typeof describeMessage>;
export type PingMessage = z.infer<typeof pingMessage>;
export type DrainMessage = z.infer<typeof drainMessage>;
export type AgentMessage =
  | HealthMessage
  | DescribeMessage
  | PingMessage
  | DrainMessage
  | SidecarMessage;

const SCHEMAS = {
  health: healthMessage,
  describe: describeMessage,
  ping: pingMessage,
  drain: drainMessage,
  // Additive (issue 23): answered by the mesh function's route, else SidecarUnavailable.
  sidecar: sidecarMessage,
} as const;
const ACTIONS = Object.keys(SCHEMAS).join(', ');

/** Parses one message body; throws InvalidMessageError with a code for each kind of mistake. */
export function parseAgentMessage(
  body: string | null | undefined,
  isBase64Encoded = false,
): AgentMessage {
  return readAgentMessage(body, isBase64Encoded).message;
}

/**
 * A message and the fields of it the registrar did not read. The protocol only grows: a newer
 * agent may send a field this registrar does not know, which is then ignored and named in the
 * reply (`ignoredFields`), so the agent knows it had no effect. (`drain` refuses one instead:
 * a drain's meaning must not change behind the agent's back.)
 */
export function readAgentMessage(
  body: string | null | undefined,
  isBase64Encoded = false,
): { message: AgentMessage; ignoredFields: string[] } {
  const text = isBase64Encoded ? Buffer.from(body ?? '', 'base64').toString('utf8') : (body ?? '');
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_MESSAGE_BYTES) {
    throw new InvalidMessageError(
      `message of ${bytes} bytes is over the ${MAX_MESSAGE_BYTES} byte limit; send smaller messages`,
      MESSAGE_ERROR_CODES.tooLarge,
    );
  }
  const json = parseJson(text);
  const action =
    typeof json === 'object' && json !== null ? (json as { action?: unknown }).action : undefined;
  if (typeof action !== 'string' || !Object.hasOwn(SCHEMAS, action)) {
    const shown = typeof action === 'string' ? ` '${action.slice(0, 40)}'` : '';
    throw new InvalidMessageError(
      `unknown action${shown}; send one of ${ACTIONS} as {"action":"<name>",...}`,
      MESSAGE_ERROR_CODES.unknownAction,
    );
  }
  const parsed = SCHEMAS[action as keyof typeof SCHEMAS].safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => issue.message).join('; ');
    throw new InvalidMessageError(
      `invalid ${action} message: ${problems}`,
      MESSAGE_ERROR_CODES.invalid,
    );
  }
  const known = Object.keys(SCHEMAS[action as keyof typeof SCHEMAS].shape);
  const ignoredFields = Object.keys(json as object)
    .filter((field) => !known.includes(field))
    .map((field) => field.slice(0, 64))
    .slice(0, 16);
  return { message: parsed.data, ignoredFields };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidMessageError(
      'message is not JSON; send {"action":"health","healthy":true} or {"action":"describe"}',
      MESSAGE_ERROR_CODES.notJson,
    );
  }
}
