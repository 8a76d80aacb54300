/** The reply to `{"action":"drain"}` (parsed with the other messages, agent-messages.ts). */
export interface DrainAck {
  action: 'drain';
  ok: true;
}

export function drainAck(): DrainAck {
  return { action: 'drain', ok: true };
}
