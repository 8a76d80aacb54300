import { pingIntervalMs } from './ping-interval.ts';
import type { MachineEvent } from './supervisor-state.ts';
import type { Step } from './supervisor-step.ts';

/**
 * Keeping the current connection: its keepalive ping, the `describe` that learns the entry
 * and its probe, and the heartbeat the registrar names (in `describe`, or told later).
 */

/** Tries of a heartbeat acknowledgement whose reply did not come (see `heartbeatTold`). */
export const ACK_ATTEMPTS = 3;

/**
 * Pings at the interval the registrar names: it closes a connection silent for that interval
 * times its group's miss count.
 */
export function schedulePing(step: Step, linkId: number): void {
  step.cancel('ping');
  step.arm('ping', step.s.pingMs ?? step.c.timing.pingIntervalMs, undefined, linkId);
}

export function pingDue(step: Step, linkId: number | undefined): void {
  const current = step.s.current;
  if (!current || current.id !== linkId || step.s.lifecycle === 'stopped') return;
  schedulePing(step, current.id);
  step.fx.push({ type: 'ping', linkId: current.id, sentAt: step.c.now });
}

/**
 * A ping went unanswered. The ping is there to find a dead connection, and any frame that
 * arrived since it was sent proves this one alive: above all API Gateway's answer to a
 * throttled ping. The `ping` route's throttle is shared by every agent of the stage, so one
 * tenant flooding it would otherwise make every agent drop its connection and reconnect at
 * once. Only a connection silent for the whole reply timeout is dropped.
 */
export function pongMissed(
  step: Step,
  event: Extract<MachineEvent, { type: 'pong-missed' }>,
): void {
  if (step.s.current?.id !== event.linkId) return;
  if (event.answeredSince) {
    step.log('warn', 'no pong from the registrar, but the connection answered since; keeping it', {
      connection: event.linkId,
      ...(event.gateway !== undefined ? { gateway: event.gateway } : {}),
    });
    return;
  }
  step.log('warn', 'no pong from the registrar; dropping the connection', {
    connection: event.linkId,
  });
  step.fx.push({ type: 'close', linkId: event.linkId });
}

/**
 * Learned the entry's name and the group's probe. Says `registered as` on every
 * registration (a re-registration says so and why), with the gateway's id of the
 * connection, the one the registrar's own logs and console name.
 */
export function described(step: Step, event: Extract<MachineEvent, { type: 'described' }>): void {
  const current = step.s.current;
  // A probe started now would report health that the drain must not see; a reply from a
  // connection already replaced is late, and its successor describes itself.
  if (!step.running || current?.id !== event.linkId) return;
  const { name, connectionId } = event.reply;
  // A rotation (or the replacement of a connection that held nothing) opens the new
  // connection while the old one still holds the entry; a reconnect follows a loss.
  const line =
    step.s.entryName === undefined
      ? `registered as ${name}`
      : `re-registered as ${name} ${current.kind === 'rotate' ? 'on a new connection' : 'after a reconnect'}`;
  step.log('info', line, { entry: name, connection: current.id, connectionId });
  step.s.entryName = name;
  step.s.replacements = 0;
  step.emit({ type: 'registered', name, linkId: current.id });
  step.fx.push({ type: 'maintenance', maintenance: event.reply.maintenance, linkId: current.id });
  step.fx.push({ type: 'probe-apply', probe: event.reply.probe });
  applyHeartbeat(step, event.reply.heartbeat, current.id);
}

export function describeFailed(
  step: Step,
  event: Extract<MachineEvent, { type: 'describe-failed' }>,
): void {
  const current = step.s.current;
  if (!step.running || current?.id !== event.linkId || event.failure === 'closed') return;
  if (event.failure === 'not-registered') {
    step.replace(current, 'the registrar says this connection holds no entry');
    return;
  }
  step.log('warn', 'describe failed; asking again', { reason: event.message });
  step.arm('describe', step.c.timing.ackTimeoutMs);
}

/** A changed interval takes effect now, not after one more ping at the old pace. */
export function applyHeartbeat(step: Step, heartbeat: unknown, linkId: number): void {
  const configured = step.c.timing.pingIntervalMs;
  const ms = pingIntervalMs(heartbeat, configured);
  if (ms === (step.s.pingMs ?? configured)) return;
  step.s.pingMs = ms;
  step.log('info', 'pinging at the interval the registrar named', { intervalMs: ms });
  if (step.s.current?.id === linkId) schedulePing(step, linkId);
}

/**
 * The registrar tells a changed heartbeat on the live connection (a `heartbeat-change`
 * notice), and holds this connection to it once acknowledged. So that the agent never pings
 * slower than the bound it is held to: a shorter interval is taken before the
 * acknowledgement, a longer one only once the registrar answered `ok` (a lost reply, a
 * refusal, a closed connection: it keeps the shorter one, which satisfies both bounds).
 */
export function heartbeatTold(
  step: Step,
  event: Extract<MachineEvent, { type: 'heartbeat-told' }>,
): void {
  if (!step.running || step.s.current?.id !== event.linkId) return;
  const configured = step.c.timing.pingIntervalMs;
  const told = { intervalSeconds: event.intervalSeconds, misses: event.misses };
  const shorter = pingIntervalMs(told, configured) <= (step.s.pingMs ?? configured);
  if (shorter) applyHeartbeat(step, told, event.linkId);
  const ackId = step.s.nextAckId++;
  step.s.acks[ackId] = { linkId: event.linkId, ...told, shorter, attempt: 1 };
  step.fx.push({ type: 'ack-heartbeat', linkId: event.linkId, ackId, ...told });
}

export function heartbeatAnswered(
  step: Step,
  event: Extract<MachineEvent, { type: 'heartbeat-answered' }>,
): void {
  const ack = step.s.acks[event.ackId];
  // Answered already (a duplicate reply): the first answer decided.
  if (!ack) return;
  delete step.s.acks[event.ackId];
  const told = { intervalSeconds: ack.intervalSeconds, misses: ack.misses };
  if (event.outcome === 'ok') {
    if (!ack.shorter) applyHeartbeat(step, told, ack.linkId);
    step.log('info', 'acknowledged the heartbeat the registrar named', {
      ...told,
      connection: ack.linkId,
    });
    return;
  }
  // A reply lost on the way (a timeout) is asked again: the acknowledgement is idempotent,
  // and without its `ok` a longer interval is never taken.
  if (event.outcome === 'lost' && ack.attempt < ACK_ATTEMPTS && step.s.current?.id === ack.linkId) {
    step.s.acks[event.ackId] = { ...ack, attempt: ack.attempt + 1 };
    step.fx.push({ type: 'ack-heartbeat', linkId: ack.linkId, ackId: event.ackId, ...told });
    return;
  }
  step.log(
    'warn',
    'could not acknowledge the heartbeat the registrar named; keeping the current ping',
    { reason: event.message, connection: ack.linkId },
  );
}
