import type { Heartbeat } from '../domain/heartbeat.ts';

/**
 * Server to agent (additive to protocol v1, issue 44): its group's heartbeat changed. Pushed
 * through API Gateway's management API (`POST @connections/{id}`) by the sweeper's pass over
 * the group, to each holder of the entry that takes notices (agents of 0.3 or newer) and was
 * told another setting, again on every pass until the agent acknowledges it. The agent answers
 * with `{"action":"heartbeat","intervalSeconds":..,"misses":..}` (HeartbeatAck): a shorter
 * interval it pings at before it acknowledges, a longer one only once the registrar said `ok`
 * (from then on it is held to it), so at no moment does it ping slower than the bound it is
 * held to.
 *
 * Agents that predate it drop it unread (a message whose action answers none of their
 * requests: agent/connection.ts); they keep the bound they were told until they reconnect.
 */
export interface HeartbeatNotice {
  action: 'heartbeat-change';
  heartbeat: { intervalSeconds: number; misses: number };
}

export function heartbeatNotice(heartbeat: Heartbeat): HeartbeatNotice {
  return {
    action: 'heartbeat-change',
    heartbeat: { intervalSeconds: heartbeat.intervalMs / 1000, misses: heartbeat.misses },
  };
}

/** The registrar's answer to an acknowledgement it recorded: the agent is held to it now. */
export interface HeartbeatAck {
  action: 'heartbeat';
  ok: true;
  heartbeat: { intervalSeconds: number; misses: number };
}

export function heartbeatAck(heartbeat: Heartbeat): HeartbeatAck {
  return {
    action: 'heartbeat',
    ok: true,
    heartbeat: { intervalSeconds: heartbeat.intervalMs / 1000, misses: heartbeat.misses },
  };
}
