import { REPLACED_CLOSE_REASON } from '../lib/protocol/close-reasons.ts';
import { failureDelay, missingGroupDelay, refusalDelay, rotationDelay } from './backoff.ts';
import {
  described,
  describeFailed,
  heartbeatAnswered,
  heartbeatTold,
  pingDue,
  pongMissed,
  schedulePing,
} from './supervisor-keepalive.ts';
import type {
  AttemptKind,
  CurrentLink,
  MachineContext,
  MachineEvent,
  MachineState,
  OpenFailure,
  TimerName,
} from './supervisor-state.ts';
import { Step, seconds, type Transition } from './supervisor-step.ts';

export { ACK_ATTEMPTS } from './supervisor-keepalive.ts';
export { seconds, type Transition } from './supervisor-step.ts';

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
  const step = new MachineStep(state, context);
  step.on(event);
  return step.result();
}

/** The events, as the machine answers them. */
class MachineStep extends Step {
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
        described(this, event);
        return;
      case 'describe-failed':
        describeFailed(this, event);
        return;
      case 'pong-missed':
        pongMissed(this, event);
        return;
      case 'heartbeat-told':
        heartbeatTold(this, event);
        return;
      case 'heartbeat-answered':
        heartbeatAnswered(this, event);
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
    const current: CurrentLink = { id: linkId, openedAt: this.c.now, kind };
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
    schedulePing(this, linkId);
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
    const { timing } = this.c;
    if (failure.kind === 'not-registrar') {
      // `--url` answers, but not as a registrar (a web page, a redirect, a proxy's error
      // page): only fixing the URL helps, so it waits as long as after a refusal, said once.
      this.s.refusals += 1;
      const delay = refusalDelay(this.s.refusals, timing, this.c.random());
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
        ? missingGroupDelay(this.s.refusals, timing, this.c.random())
        : refusalDelay(this.s.refusals, timing, this.c.random());
      this.log('error', `${failure.reason}; retrying in ${seconds(delay)}`, {
        status: failure.status,
      });
      this.scheduleRetry(delay, failure.reason, true, next);
      return;
    }
    this.s.failures += 1;
    this.s.outage = true;
    const delay = failureDelay(this.failureCount, timing, this.c.random());
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
    const { timing } = this.c;
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
    if (this.c.now - closed.openedAt >= timing.stableAfterMs) this.s.shortLived = 0;
    else this.s.shortLived += 1;
    this.s.failures += 1;
    const delay = failureDelay(this.failureCount, timing, this.c.random());
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

  scheduleRotation(): void {
    this.cancel('rotate');
    if (this.s.lifecycle === 'draining') return;
    this.arm('rotate', rotationDelay(this.c.timing, this.c.random()));
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
        pingDue(this, armed.linkId);
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
