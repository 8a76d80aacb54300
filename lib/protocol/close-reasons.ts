/**
 * Close reasons of protocol v1, shared by the agent and the functions. Kept free of imports so
 * the agent's bundle takes only these strings.
 */

/**
 * An agent closes a connection with this reason when a newer one has replaced it (rotation
 * before API Gateway's 2 h limit, make before break). `$disconnect` reads it as a hint for the
 * order of its conditional writes, never for the outcome: it comes from the client.
 */
export const REPLACED_CLOSE_REASON = 'rotated';

/** Any other close by the agent (shutdown, a dead connection). */
export const AGENT_CLOSE_REASON = 'agent closing';
