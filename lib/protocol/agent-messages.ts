import { InvalidRequestError } from '../domain/errors.ts';
import { SIDECAR_ACTION, type SidecarMessage, sidecarMessageProblem } from './sidecar-action.ts';

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

export interface HealthMessage {
  action: 'health';
  healthy: boolean;
  message?: string;
}
export interface DescribeMessage {
  action: 'describe';
}
// Answered by API Gateway's mock integration in AWS; answered here when a gateway forwards it.
export interface PingMessage {
  action: 'ping';
}
/**
 * `{"action":"drain"}`: the VM is shutting down (the agent got SIGTERM). Nothing else may come
 * with it: a field the registrar does not know would be ignored where the agent meant it.
 */
export interface DrainMessage {
  action: 'drain';
}
/**
 * `{"action":"heartbeat","intervalSeconds":5,"misses":2}`: the agent acknowledges a changed
 * heartbeat the registrar told it (lib/protocol/heartbeat-notice.ts), so it is held to it.
 */
export interface HeartbeatMessage {
  action: 'heartbeat';
  intervalSeconds: number;
  misses: number;
}
export type AgentMessage =
  | HealthMessage
  | DescribeMessage
  | PingMessage
  | DrainMessage
  | SidecarMessage
  | HeartbeatMessage;

type Checked = { message: AgentMessage } | { problems: string[] };

/**
 * Each action's check, plain code (a validation library would be most of the message
 * function's bundle, issue 27). Like a schema: the known fields are kept, unknown ones dropped,
 * except where an action refuses them; every problem is reported, in field order.
 */
const CHECKS: Record<AgentMessage['action'], (json: Record<string, unknown>) => Checked> = {
  health: (json) => {
    const problems: string[] = [];
    const { healthy, message } = json;
    if (typeof healthy !== 'boolean') problems.push("'healthy' must be true or false");
    if (message !== undefined && typeof message !== 'string') {
      problems.push("'message' must be a string");
    } else if (typeof message === 'string' && message.length > MAX_HEALTH_MESSAGE_LENGTH) {
      problems.push(`'message' must be at most ${MAX_HEALTH_MESSAGE_LENGTH} characters`);
    }
    if (problems.length > 0) return { problems };
    return {
      message: {
        action: 'health',
        healthy: healthy as boolean,
        ...(message === undefined ? {} : { message: message as string }),
      },
    };
  },
  describe: () => ({ message: { action: 'describe' } }),
  ping: () => ({ message: { action: 'ping' } }),
  drain: (json) => {
    const extra = Object.keys(json).find((key) => key !== 'action');
    return extra === undefined
      ? { message: { action: 'drain' } }
      : { problems: [`unexpected field '${extra}'; send {"action":"drain"}`] };
  },
  // Additive (issue 44): an agent of 0.3 or newer acknowledges a changed heartbeat.
  heartbeat: (json) => {
    const { intervalSeconds, misses } = json;
    const problems: string[] = [];
    if (typeof intervalSeconds !== 'number' || !Number.isFinite(intervalSeconds)) {
      problems.push("'intervalSeconds' must be a number of seconds");
    }
    if (typeof misses !== 'number' || !Number.isInteger(misses)) {
      problems.push("'misses' must be a whole number");
    }
    if (problems.length > 0) return { problems };
    return {
      message: {
        action: 'heartbeat',
        intervalSeconds: intervalSeconds as number,
        misses: misses as number,
      },
    };
  },
  // Additive (issue 23): answered by the mesh function's route, else SidecarUnavailable.
  sidecar: (json) => {
    const problem = sidecarMessageProblem(json);
    return problem === undefined
      ? { message: { action: SIDECAR_ACTION } }
      : { problems: [problem] };
  },
};
const ACTIONS = Object.keys(CHECKS).join(', ');

/** The fields each action reads; any other is ignored and named in the reply. */
const KNOWN_FIELDS: Record<AgentMessage['action'], readonly string[]> = {
  health: ['action', 'healthy', 'message'],
  describe: ['action'],
  ping: ['action'],
  drain: ['action'],
  sidecar: ['action'],
  heartbeat: ['action', 'intervalSeconds', 'misses'],
};

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
  if (typeof action !== 'string' || !Object.hasOwn(CHECKS, action)) {
    const shown = typeof action === 'string' ? ` '${action.slice(0, 40)}'` : '';
    throw new InvalidMessageError(
      `unknown action${shown}; send one of ${ACTIONS} as {"action":"<name>",...}`,
      MESSAGE_ERROR_CODES.unknownAction,
    );
  }
  const checked = CHECKS[action as AgentMessage['action']](json as Record<string, unknown>);
  if ('problems' in checked) {
    throw new InvalidMessageError(
      `invalid ${action} message: ${checked.problems.join('; ')}`,
      MESSAGE_ERROR_CODES.invalid,
    );
  }
  const known = KNOWN_FIELDS[action as AgentMessage['action']];
  const ignoredFields = Object.keys(json as object)
    .filter((field) => !known.includes(field))
    .map((field) => field.slice(0, 64))
    .slice(0, 16);
  return { message: checked.message, ignoredFields };
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
