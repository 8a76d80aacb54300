import { REPLACED_CLOSE_REASON } from '../lib/protocol/close-reasons.ts';
import { failureDelay, missingGroupDelay, refusalDelay, rotationDelay } from './backoff.ts';
import type { LogFields, LogLevel } from './logger.ts';
import { pingIntervalMs } from './ping-interval.ts';
import {
  type AgentEvent,
  type AttemptKind,
  type CurrentLink,
  type Effect,
  type MachineContext,
  type MachineEvent,
  type MachineState,
  type OpenFailure,
  phaseOf,
  type TimerName,
} from './supervisor-state.ts';

/** Tries of a heartbeat acknowledgement whose reply did not come (see `heartbeat-told`). */
export const ACK_ATTEMPTS = 3;

export interface Transition {
  state: MachineState;
  effects: Effect[];
}

/**
 * The supervisor's logic: the next state and the effects to perform, from the state and one
 * event. Pure: time and jitter come in `context`, nothing is performed here. Keeps exactly one
 * registered connection alive for as long as the agent runs:
 * - rotation, make before break: before API Gateway's age limit a second connection is
 *   opened, and the first is closed only once the second is registered, so the entry is
 *   held by at least one live connection throughout;
 * - failures back off exponentially with full jitter (cap 60 s); refusals (400/401/403/404/
 *   409) wait much longer and log the registrar's reason, since retrying cannot fix them;
 *   the registrar answering again (a connection accepted, or a refusal) resets the failure
 *   count, so an outage's backoff never delays the recovery from the next one; connections
 *   that die young in a row keep a count of their own, so no loop is ever tight;
 * - keepalive pings stay inside API Gateway's 10-minute idle timeout; a missing pong is
 *   treated as a dead connection;
 * - a connection the registrar does not count (it answers `NotRegistered`, or two health
 *   reports in a row go unacknowledged) is replaced, make before break: at once the first
 *   time, then with the failure backoff, so a registrar that keeps answering so is not
 *   hammered.
 */
export function transition(
  state: MachineState,
  event: MachineEvent,
  context: MachineContext,
): Transition {
  const step = new Step(state, context);
  step.on(event);
  return step.result();
}

/** One transition under way: a private copy of the state, and the effects asked so far. */
class Step {
  readonly s: MachineState;
  readonly fx: Effect[] = [];
  readonly #c: MachineContext;

  constructor(state: MachineState, context: MachineContext) {
    this.s = { ...state, timers: { ...state.timers }, acks: { ...state.acks } };
    this.#c = context;
  }

  result(): Transition {
    this.s.phase = phaseOf(this.s);
    return { state: this.s, effects: this.fx };
  }

  on(event: MachineEvent): void {
    switch (event.type) {
      case 'start':
        if (this.s.lifecycle !== 'idle') return;
        this.s.lifecycle = 'running';
        this.attempt('start');
        return;
      case 'opened':
        this.opened(event.linkId, event.closed);
        return;
      case 'open-failed':
        this.openFailed(event.failure);
        return;
      case 'closed':
        this.closed(event.linkId, event.code, event.reason);
        return;
      case 'timer-fired':
        this.timerFired(event.timer, event.token);
        return;
      case 'described':
        this.described(event);
        return;
      case 'describe-failed':
        this.describeFailed(event);
        return;
      case 'pong-missed':
        this.pongMissed(event);
        return;
      case 'heartbeat-told':
        this.heartbeatTold(event);
        return;
      case 'heartbeat-answered':
        this.heartbeatAnswered(event);
        return;
      case 'health-acked':
        // An acknowledged report proves the connection holds the entry.
        this.s.replacements = 0;
        return;
      case 'link-stuck':
        if (this.s.current?.id === event.linkId) this.replace(this.s.current, event.reason);
        return;
      case 'drain':
        this.drain();
        return;
      case 'hold-drain':
        if (this.s.lifecycle === 'draining') this.arm('drain', event.ms);
        return;
      case 'stop':
        this.stop();
        return;
    }
  }

  // --- effects and timers ---

  log(level: LogLevel, message: string, fields?: LogFields): void {
    this.fx.push(
      fields ? { type: 'log', level, message, fields } : { type: 'log', level, message },
    );
  }

  emit(event: AgentEvent): void {
    this.fx.push({ type: 'emit', event });
  }

  arm(timer: TimerName, ms: number, kind?: AttemptKind, linkId?: number): void {
    const token = this.s.nextToken++;
    this.s.timers[timer] = {
      token,
      ms,
      ...(kind ? { kind } : {}),
      ...(linkId !== undefined ? { linkId } : {}),
    };
    this.fx.push({ type: 'arm', timer, ms, token });
  }

  cancel(...timers: TimerName[]): void {
    for (const timer of timers) {
      if (!this.s.timers[timer]) continue;
      delete this.s.timers[timer];
      this.fx.push({ type: 'cancel', timer });
    }
  }

  get running(): boolean {
    return this.s.lifecycle === 'running';
  }

  /** The exponent of the failure backoff: this outage's failures, or the run of young drops. */
  get failureCount(): number {
    return Math.max(this.s.failures, this.s.shortLived);
  }

  // --- connecting ---

  attempt(kind: AttemptKind): void {
    if (!this.running || this.s.attempt) return;
    this.s.attempt = { kind };
    this.emit({ type: 'connecting', kind });
    this.fx.push({ type: 'open' });
  }

  opened(linkId: number, closedAlready: boolean): void {
    const kind = this.s.attempt?.kind ?? 'reconnect';
    this.s.attempt = undefined;
    // Opened while stopping: `stop` closes every connection the shell opened.
    if (this.s.lifecycle === 'stopped') return;
    const previous = this.s.current;
    const current: CurrentLink = { id: linkId, openedAt: this.#c.now, kind };
    this.s.current = current;
    // The registrar answered again: the backoff of the outage (or of failed rotations) is
    // over. Without this, a registrar restarted soon after an earlier outage met an agent
    // still counting that outage's failures: 54 s of wait after a restart, where README
    // promises VMs back within 20 s. An accept that ends an outage (attempts failed before
    // it) also ends the run of young drops: those were restarts, not a registrar that drops
    // what it accepts; such a loop never fails an attempt, so `shortLived` still backs it off.
    if (this.s.outage) this.s.shortLived = 0;
    this.s.outage = false;
    this.s.failures = 0;
    this.s.refusals = 0;
    this.s.notRegistrarSaid = undefined;
    this.fx.push({ type: 'watch', linkId });
    if (closedAlready) {
      // Closed between the upgrade and here: the close listener came too late to hear it.
      this.closed(linkId, 1006, 'closed right after opening');
      return;
    }
    this.log('info', kind === 'rotate' ? 'rotated to a new connection' : 'connected', {
      connection: linkId,
    });
    this.emit({ type: 'connected', kind, linkId });
    this.scheduleRotation();
    this.schedulePing(linkId);
    // The last state goes first on the new connection: it is the one the registrar now counts.
    this.fx.push({ type: 'health-resend' });
    // Make before break: the new connection is registered (the upgrade succeeds only after
    // $connect did), so closing the old one cannot leave the entry disconnected.
    // The reason lets $disconnect expect another connection to hold the entry: one write.
    if (previous)
      this.fx.push({ type: 'close', linkId: previous.id, reason: REPLACED_CLOSE_REASON });
    // In the background: a slow describe must not hold up reconnects or rotations.
    // Draining: a probe started from its reply would report health the drain must not see.
    this.cancel('describe');
    if (this.running) this.fx.push({ type: 'describe', linkId });
  }

  openFailed(failure: OpenFailure): void {
    const kind = this.s.attempt?.kind ?? 'reconnect';
    this.s.attempt = undefined;
    // Draining: the VM is leaving, so a failed attempt is not retried (nor worth a line).
    if (!this.running) return;
    const next = this.s.current ? 'rotate' : 'reconnect';
    const { timing } = this.#c;
    if (failure.kind === 'not-registrar') {
      // `--url` answers, but not as a registrar (a web page, a redirect, a proxy's error
      // page): only fixing the URL helps, so it waits as long as after a refusal, said once.
      this.s.refusals += 1;
      const delay = refusalDelay(this.s.refusals, timing, this.#c.random());
      const line = `${failure.message}; check --url (wss://<api>.execute-api.<region>.amazonaws.com/<stage>, or ws://127.0.0.1:8080 for npm start)`;
      if (line !== this.s.notRegistrarSaid) {
        this.log(
          'error',
          `${line}; retrying in ${seconds(delay)}, and saying this again only if the answer changes`,
          { status: failure.status, contentType: failure.contentType },
        );
        this.s.notRegistrarSaid = line;
      } else {
        this.log(
          'debug',
          `the URL still answers HTTP ${failure.status}; retrying in ${seconds(delay)}`,
        );
      }
      this.scheduleRetry(delay, failure.message, true, next);
      return;
    }
    this.s.notRegistrarSaid = undefined;
    if (failure.kind === 'refused') {
      // A refusal is an answer: the registrar is up, so the failure count starts over (the
      // refusal has its own, longer backoff).
      this.s.failures = 0;
      this.s.refusals += 1;
      // A missing group is fixed by an operator's apply alone (an accidental `delete wg`
      // re-applied): retried often enough that the VM is back soon after, without a restart.
      const delay = failure.missingGroup
        ? missingGroupDelay(this.s.refusals, timing, this.#c.random())
        : refusalDelay(this.s.refusals, timing, this.#c.random());
      this.log('error', `${failure.reason}; retrying in ${seconds(delay)}`, {
        status: failure.status,
      });
      this.scheduleRetry(delay, failure.reason, true, next);
      return;
    }
    this.s.failures += 1;
    this.s.outage = true;
    const delay = failureDelay(this.failureCount, timing, this.#c.random());
    const reason = `connect failed: ${failure.description}`;
    const still = kind === 'rotate' && this.s.current ? ' (the current connection stays open)' : '';
    this.log('warn', `reconnecting in ${seconds(delay)} because ${reason}${still}`, {
      attempt: this.failureCount,
    });
    this.scheduleRetry(delay, reason, false, next);
  }

  closed(linkId: number, code: number, reason: string): void {
    this.emit({ type: 'closed', linkId, code });
    // An old connection closing after a rotation is expected and changes nothing.
    const closed = this.s.current;
    if (closed?.id !== linkId || this.s.lifecycle === 'stopped') return;
    this.s.current = undefined;
    this.cancel('rotate', 'ping', 'describe');
    const { timing } = this.#c;
    const why = `the connection closed (${code}${reason ? ` ${reason}` : ''})`;
    if (this.s.lifecycle === 'draining') {
      // The VM is leaving: a reconnect would register it again. Nothing left to wait for.
      this.log(
        'warn',
        `the connection closed while draining (${code}${reason ? ` ${reason}` : ''}); not reconnecting`,
      );
      this.endDrain();
      return;
    }
    // A connection that stayed up for a while ends a run of short-lived ones; one that died
    // young extends it, so a registrar that accepts and drops at once is not retried in a
    // tight loop even though each accept resets `failures`.
    if (this.#c.now - closed.openedAt >= timing.stableAfterMs) this.s.shortLived = 0;
    else this.s.shortLived += 1;
    this.s.failures += 1;
    const delay = failureDelay(this.failureCount, timing, this.#c.random());
    if (this.s.attempt) {
      // A rotation already under way becomes the reconnect; it schedules its own retry if it fails.
      this.log('warn', `${why}; a new connection is already being opened`);
      return;
    }
    this.log('warn', `reconnecting in ${seconds(delay)} because ${why}`, {
      attempt: this.failureCount,
    });
    this.scheduleRetry(delay, why, false, 'reconnect');
  }

  /** Opens a new connection in place of `stale`, which stays open until the new one holds. */
  replace(stale: CurrentLink, reason: string): void {
    if (!this.running || this.s.current !== stale || this.s.replacing === stale.id) return;
    this.s.replacing = stale.id;
    this.s.replacements += 1;
    const delay =
      this.s.replacements === 1
        ? 0
        : failureDelay(this.s.replacements - 1, this.#c.timing, this.#c.random());
    this.emit({ type: 'replacing', linkId: stale.id, delayMs: delay, reason });
    if (this.s.attempt) {
      this.log('warn', `${reason}; a new connection is already being opened`);
      return;
    }
    this.log('warn', `opening a new connection in ${seconds(delay)} because ${reason}`, {
      connection: stale.id,
    });
    this.scheduleRetry(delay, reason, false, 'rotate');
  }

  scheduleRetry(delayMs: number, reason: string, refused: boolean, kind: AttemptKind): void {
    this.cancel('retry');
    if (this.s.lifecycle === 'draining') return;
    this.emit({ type: 'retry-scheduled', delayMs, reason, refused });
    this.arm('retry', delayMs, kind);
  }

  scheduleRotation(): void {
    this.cancel('rotate');
    if (this.s.lifecycle === 'draining') return;
    this.arm('rotate', rotationDelay(this.#c.timing, this.#c.random()));
  }

  timerFired(timer: TimerName, token: number): void {
    const armed = this.s.timers[timer];
    // Cancelled, or armed again since: a late fire (after stop, after a close) does nothing.
    if (armed?.token !== token) return;
    delete this.s.timers[timer];
    switch (timer) {
      case 'retry':
        this.attempt(armed.kind ?? 'reconnect');
        return;
      case 'rotate':
        this.attempt('rotate');
        return;
      case 'ping':
        this.pingDue(armed.linkId);
        return;
      case 'describe':
        if (this.running && this.s.current)
          this.fx.push({ type: 'describe', linkId: this.s.current.id });
        return;
      case 'drain':
        this.fx.push({ type: 'end-drain' });
        return;
    }
  }

  // --- keeping the connection: ping, describe, heartbeat ---

  /**
   * Pings at the interval the registrar names: it closes a connection silent for that interval
   * times its group's miss count.
   */
  schedulePing(linkId: number): void {
    this.cancel('ping');
    this.arm('ping', this.s.pingMs ?? this.#c.timing.pingIntervalMs, undefined, linkId);
  }

  pingDue(linkId: number | undefined): void {
    const current = this.s.current;
    if (!current || current.id !== linkId || this.s.lifecycle === 'stopped') return;
    this.schedulePing(current.id);
    this.fx.push({ type: 'ping', linkId: current.id, sentAt: this.#c.now });
  }

  /**
   * A ping went unanswered. The ping is there to find a dead connection, and any frame that
   * arrived since it was sent proves this one alive: above all API Gateway's answer to a
   * throttled ping. The `ping` route's throttle is shared by every agent of the stage, so one
   * tenant flooding it would otherwise make every agent drop its connection and reconnect at
   * once. Only a connection silent for the whole reply timeout is dropped.
   */
  pongMissed(event: Extract<MachineEvent, { type: 'pong-missed' }>): void {
    if (this.s.current?.id !== event.linkId) return;
    if (event.answeredSince) {
      this.log(
        'warn',
        'no pong from the registrar, but the connection answered since; keeping it',
        {
          connection: event.linkId,
          ...(event.gateway !== undefined ? { gateway: event.gateway } : {}),
        },
      );
      return;
    }
    this.log('warn', 'no pong from the registrar; dropping the connection', {
      connection: event.linkId,
    });
    this.fx.push({ type: 'close', linkId: event.linkId });
  }

  /**
   * Learned the entry's name and the group's probe. Says `registered as` on every
   * registration (a re-registration says so and why), with the gateway's id of the
   * connection, the one the registrar's own logs and console name.
   */
  described(event: Extract<MachineEvent, { type: 'described' }>): void {
    const current = this.s.current;
    // A probe started now would report health that the drain must not see; a reply from a
    // connection already replaced is late, and its successor describes itself.
    if (!this.running || current?.id !== event.linkId) return;
    const { name, connectionId } = event.reply;
    // A rotation (or the replacement of a connection that held nothing) opens the new
    // connection while the old one still holds the entry; a reconnect follows a loss.
    const line =
      this.s.entryName === undefined
        ? `registered as ${name}`
        : `re-registered as ${name} ${current.kind === 'rotate' ? 'on a new connection' : 'after a reconnect'}`;
    this.log('info', line, { entry: name, connection: current.id, connectionId });
    this.s.entryName = name;
    this.s.replacements = 0;
    this.emit({ type: 'registered', name, linkId: current.id });
    this.fx.push({ type: 'maintenance', maintenance: event.reply.maintenance, linkId: current.id });
    this.fx.push({ type: 'probe-apply', probe: event.reply.probe });
    this.applyHeartbeat(event.reply.heartbeat, current.id);
  }

  describeFailed(event: Extract<MachineEvent, { type: 'describe-failed' }>): void {
    const current = this.s.current;
    if (!this.running || current?.id !== event.linkId || event.failure === 'closed') return;
    if (event.failure === 'not-registered') {
      this.replace(current, 'the registrar says this connection holds no entry');
      return;
    }
    this.log('warn', 'describe failed; asking again', { reason: event.message });
    this.arm('describe', this.#c.timing.ackTimeoutMs);
  }

  /** A changed interval takes effect now, not after one more ping at the old pace. */
  applyHeartbeat(heartbeat: unknown, linkId: number): void {
    const configured = this.#c.timing.pingIntervalMs;
    const ms = pingIntervalMs(heartbeat, configured);
    if (ms === (this.s.pingMs ?? configured)) return;
    this.s.pingMs = ms;
    this.log('info', 'pinging at the interval the registrar named', { intervalMs: ms });
    if (this.s.current?.id === linkId) this.schedulePing(linkId);
  }

  /**
   * The registrar tells a changed heartbeat on the live connection (a `heartbeat-change`
   * notice), and holds this connection to it once acknowledged. So that the agent never pings
   * slower than the bound it is held to: a shorter interval is taken before the
   * acknowledgement, a longer one only once the registrar answered `ok` (a lost reply, a
   * refusal, a closed connection: it keeps the shorter one, which satisfies both bounds).
   */
  heartbeatTold(event: Extract<MachineEvent, { type: 'heartbeat-told' }>): void {
    if (!this.running || this.s.current?.id !== event.linkId) return;
    const configured = this.#c.timing.pingIntervalMs;
    const told = { intervalSeconds: event.intervalSeconds, misses: event.misses };
    const shorter = pingIntervalMs(told, configured) <= (this.s.pingMs ?? configured);
    if (shorter) this.applyHeartbeat(told, event.linkId);
    const ackId = this.s.nextAckId++;
    this.s.acks[ackId] = { linkId: event.linkId, ...told, shorter, attempt: 1 };
    this.fx.push({ type: 'ack-heartbeat', linkId: event.linkId, ackId, ...told });
  }

  heartbeatAnswered(event: Extract<MachineEvent, { type: 'heartbeat-answered' }>): void {
    const ack = this.s.acks[event.ackId];
    // Answered already (a duplicate reply): the first answer decided.
    if (!ack) return;
    delete this.s.acks[event.ackId];
    const told = { intervalSeconds: ack.intervalSeconds, misses: ack.misses };
    if (event.outcome === 'ok') {
      if (!ack.shorter) this.applyHeartbeat(told, ack.linkId);
      this.log('info', 'acknowledged the heartbeat the registrar named', {
        ...told,
        connection: ack.linkId,
      });
      return;
    }
    // A reply lost on the way (a timeout) is asked again: the acknowledgement is idempotent,
    // and without its `ok` a longer interval is never taken.
    if (
      event.outcome === 'lost' &&
      ack.attempt < ACK_ATTEMPTS &&
      this.s.current?.id === ack.linkId
    ) {
      this.s.acks[event.ackId] = { ...ack, attempt: ack.attempt + 1 };
      this.fx.push({ type: 'ack-heartbeat', linkId: ack.linkId, ackId: event.ackId, ...told });
      return;
    }
    this.log(
      'warn',
      'could not acknowledge the heartbeat the registrar named; keeping the current ping',
      { reason: event.message, connection: ack.linkId },
    );
  }

  // --- leaving ---

  /**
   * Graceful stop begins: no more attempts, rotations, replacements or health reports. The
   * shell then tells the registrar (`drain`) and holds the connection for the drain delay.
   */
  drain(): void {
    if (this.s.lifecycle === 'stopped' || this.s.lifecycle === 'draining') return;
    this.s.lifecycle = 'draining';
    this.cancel('retry', 'rotate', 'describe');
    this.fx.push({ type: 'probe-stop' }, { type: 'health-stop' });
    this.emit({ type: 'draining' });
  }

  endDrain(): void {
    if (!this.s.timers.drain) return;
    this.cancel('drain');
    this.fx.push({ type: 'end-drain' });
  }

  /** Every timer cancelled; the shell closes every connection once the upgrade under way settles. */
  stop(): void {
    if (this.s.lifecycle === 'stopped') return;
    this.endDrain();
    this.s.lifecycle = 'stopped';
    this.cancel('retry', 'rotate', 'ping', 'describe');
    this.fx.push({ type: 'probe-stop' }, { type: 'health-stop' });
  }
}

/** A delay as the log says it: `340 ms` under a second (not `0.3 s`, nor `0.0 s`), else `2.5 s`. */
export function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
