import { formatRef, type Probe } from '../lib/domain/model.ts';
import { REPLACED_CLOSE_REASON } from '../lib/protocol/close-reasons.ts';
import { AuthSetupError } from './auth.ts';
import {
  failureDelay,
  missingGroupDelay,
  REFUSAL_STATUSES,
  refusalDelay,
  rotationDelay,
} from './backoff.ts';
import type { Clock, Timer } from './clock.ts';
import type { AgentTiming } from './config.ts';
import {
  type AgentLink,
  isNotRegistered,
  NotRegistrarError,
  RefusedError,
  type Reply,
  RequestError,
} from './connection.ts';
import { HealthReporter } from './health-reporter.ts';
import type { Logger } from './logger.ts';
import { MaintenanceNotices } from './maintenance-notices.ts';
import { pingIntervalMs } from './ping-interval.ts';
import { ProbeWatcher } from './probe-watcher.ts';
import type { ProbeCheck } from './probes/probe-result.ts';
import type { ProbeSettings } from './probes/probe-runner.ts';

/** What happened, for tests and the benchmark; logs carry the same story for people. */
export type AgentEvent =
  | { type: 'connecting'; kind: AttemptKind }
  | { type: 'connected'; kind: AttemptKind; linkId: number }
  | { type: 'registered'; name: string; linkId: number }
  | { type: 'retry-scheduled'; delayMs: number; reason: string; refused: boolean }
  | { type: 'closed'; linkId: number; code: number }
  | { type: 'replacing'; linkId: number; delayMs: number; reason: string }
  | { type: 'health-sent' | 'health-acked'; healthy: boolean }
  | { type: 'draining' }
  | { type: 'drain-sent'; linkId: number }
  | { type: 'drain-acked'; linkId: number }
  | { type: 'drain-unacknowledged'; linkId: number; reason: string };

type AttemptKind = 'start' | 'reconnect' | 'rotate';

export interface SupervisorOptions {
  clock: Clock;
  logger: Logger;
  timing: AgentTiming;
  /** Opens one connection; resolving means the registrar accepted ($connect registered). */
  open: () => Promise<AgentLink>;
  createCheck: (probe: Probe, settings: ProbeSettings) => ProbeCheck | undefined;
  /**
   * What to do about a refusal with this status (it depends on how the agent authenticates);
   * `reasonGiven` when the refusal carries the registrar's own reason.
   */
  refusalHint?: (status: number, reasonGiven: boolean, message: string) => string | undefined;
  onEvent?: (event: AgentEvent & { at: number }) => void;
}

interface Current {
  link: AgentLink;
  id: number;
  openedAt: number;
}

/**
 * Keeps exactly one registered connection, and the health it reports, alive for as long as
 * the agent runs:
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
/** Tries of a heartbeat acknowledgement whose reply did not come (see #onHeartbeatChange). */
const ACK_ATTEMPTS = 3;

export class Supervisor {
  readonly #o: SupervisorOptions;
  readonly #health: HealthReporter;
  readonly #probe: ProbeWatcher;
  /** An operator's cordon, as the registrar tells it: logged once per change. */
  readonly #maintenance: MaintenanceNotices;
  readonly #links = new Set<AgentLink>();
  #current: Current | undefined;
  /** An upgrade is under way (only the upgrade: describe and probing run after it). */
  #opening = false;
  /** Settles once the current attempt's outcome was handled; `stop` waits for it. */
  #attemptDone: Promise<void> = Promise.resolve();
  #retryTimer: Timer | undefined;
  #rotateTimer: Timer | undefined;
  #pingTimer: Timer | undefined;
  /** The ping interval the registrar named (its group's heartbeat); undefined: configured. */
  #pingMs: number | undefined;
  /** Failed attempts and lost connections since the registrar last answered. */
  #failures = 0;
  /**
   * Accepted connections in a row that closed before `stableAfterMs`. Kept apart from
   * `#failures`, which an accepted connection resets: a registrar that accepts and then drops
   * every connection still backs the agent off exponentially.
   */
  #shortLived = 0;
  /** An attempt failed since the registrar last answered: the next accept ends an outage. */
  #outage = false;
  #refusals = 0;
  #linkSeq = 0;
  /** Connections replaced in a row because they held nothing; reset once one is proven. */
  #replacements = 0;
  #replacing: Current | undefined;
  #entryName: string | undefined;
  #stopped = false;
  /** Set by `drainAndStop`: no more attempts, rotations, replacements or health reports. */
  #draining = false;
  /** Ends the drain delay early (stop, or the connection lost while draining). */
  #endDrainDelay: (() => void) | undefined;
  /**
   * The last "not a registrar" line logged: a URL that keeps answering a web page is said
   * once, not on every retry (the page itself is never logged).
   */
  #notRegistrarSaid: string | undefined;

  constructor(options: SupervisorOptions) {
    this.#o = options;
    this.#maintenance = new MaintenanceNotices(options.logger);
    const emit = (event: AgentEvent) => this.#emit(event);
    this.#health = new HealthReporter({
      clock: options.clock,
      logger: options.logger,
      retryDelayMs: options.timing.ackTimeoutMs,
      currentLink: () => this.#current?.link,
      onEvent: (event) => {
        // An acknowledged report proves the connection holds the entry.
        if (event.type === 'health-acked') this.#replacements = 0;
        emit(event);
      },
      onStuck: (link, reason) => {
        if (this.#current?.link === link) this.#replace(this.#current, reason);
      },
    });
    this.#probe = new ProbeWatcher({
      clock: options.clock,
      logger: options.logger,
      probeTimeScale: options.timing.probeTimeScale,
      createCheck: options.createCheck,
      onState: (state) => this.#health.report(state),
      onNoProbe: () => this.#health.clear(),
    });
  }

  get entryName(): string | undefined {
    return this.#entryName;
  }

  /** The connection the registrar counts now (the sidecar bootstrap asks on it). */
  get link(): AgentLink | undefined {
    return this.#current?.link;
  }

  start(): void {
    this.#attempt('start');
  }

  /**
   * Graceful stop (SIGTERM, SIGINT): tells the registrar the VM is leaving (`drain`: the entry
   * turns Healthy False, reason Draining, so the mesh stops sending new requests), keeps the
   * connection open for the drain delay while that propagates, then closes with 1000.
   * During the drain nothing reconnects, rotates or reports health: a new connection would
   * cancel the drain at the registrar, and a health report must not undo it. A registrar that
   * does not know `drain` (UnknownAction) or does not answer within the ack timeout is logged
   * and the agent closes after the delay anyway. `stop` during the drain ends it at once.
   */
  async drainAndStop(): Promise<void> {
    if (this.#stopped || this.#draining) return;
    const { timing } = this.#o;
    if (timing.drainDelayMs > 0) {
      this.#draining = true;
      await this.#drain(timing.drainDelayMs);
    }
    await this.stop();
  }

  async #drain(delayMs: number): Promise<void> {
    const { clock, logger, timing } = this.#o;
    for (const timer of [this.#retryTimer, this.#rotateTimer]) timer?.cancel();
    this.#probe.stop();
    this.#health.stop();
    this.#emit({ type: 'draining' });
    // An upgrade under way (a rotation, a reconnect) settles first, so that the drain goes
    // on the connection the registrar counts: a connect that landed after the drain would
    // cancel it.
    await this.#attemptDone;
    const current = this.#current;
    if (this.#stopped) return;
    if (current === undefined || current.link.closed) {
      logger.info('draining: not connected, so nothing to tell the registrar; stopping');
      return;
    }
    this.#emit({ type: 'drain-sent', linkId: current.id });
    try {
      await current.link.request('drain');
      logger.info(
        `draining: the registrar marked the entry not healthy (Draining); closing in ${seconds(delayMs)} while the mesh catches up`,
        { connection: current.id },
      );
      this.#emit({ type: 'drain-acked', linkId: current.id });
    } catch (error) {
      if (error instanceof RequestError && error.kind === 'closed') {
        logger.warn('draining: the connection closed before the registrar answered; stopping');
        return;
      }
      const reason =
        error instanceof RequestError && error.code === 'UnknownAction'
          ? 'the registrar does not know drain (an older version)'
          : error instanceof RequestError && error.kind === 'timeout'
            ? `the registrar did not answer the drain within ${seconds(timing.ackTimeoutMs)}`
            : `the registrar refused the drain (${(error as Error).message})`;
      logger.warn(`draining: ${reason}; closing in ${seconds(delayMs)} anyway`, {
        connection: current.id,
      });
      this.#emit({ type: 'drain-unacknowledged', linkId: current.id, reason });
    }
    if (this.#stopped || current.link.closed) return;
    await new Promise<void>((resolve) => {
      const timer = clock.setTimer(delayMs, resolve);
      this.#endDrainDelay = () => {
        timer.cancel();
        resolve();
      };
    });
    this.#endDrainDelay = undefined;
  }

  /** Closes every connection cleanly (the registrar runs $disconnect) and stops all timers. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#endDrainDelay?.();
    for (const timer of [this.#retryTimer, this.#rotateTimer, this.#pingTimer]) timer?.cancel();
    this.#probe.stop();
    this.#health.stop();
    await this.#attemptDone;
    await Promise.all([...this.#links].map((link) => link.close()));
  }

  #attempt(kind: AttemptKind): void {
    if (this.#stopped || this.#draining || this.#opening) return;
    this.#opening = true;
    this.#emit({ type: 'connecting', kind });
    // `#opening` is cleared before the outcome is handled, so that a close or failure seen
    // while handling it can schedule the next attempt.
    this.#attemptDone = this.#o.open().then(
      (link) => {
        this.#opening = false;
        this.#adopt(link, kind);
      },
      (error: unknown) => {
        this.#opening = false;
        this.#onConnectFailure(error, kind);
      },
    );
  }

  #adopt(link: AgentLink, kind: AttemptKind): void {
    this.#links.add(link);
    if (this.#stopped) {
      // Opened while stopping: `stop` closes every link in #links.
      return;
    }
    const previous = this.#current;
    const current: Current = { link, id: ++this.#linkSeq, openedAt: this.#o.clock.now() };
    this.#current = current;
    // The registrar answered again: the backoff of the outage (or of failed rotations) is
    // over. Without this, a registrar restarted soon after an earlier outage met an agent
    // still counting that outage's failures: 54 s of wait after a restart, where README
    // promises VMs back within 20 s. An accept that ends an outage (attempts failed before
    // it) also ends the run of young drops: those were restarts, not a registrar that drops
    // what it accepts; such a loop never fails an attempt, so #shortLived still backs it off.
    if (this.#outage) this.#shortLived = 0;
    this.#outage = false;
    this.#failures = 0;
    this.#refusals = 0;
    this.#notRegistrarSaid = undefined;
    link.onClose((code, reason) => this.#onClosed(current, code, reason));
    link.onNotice?.((notice) => {
      if (notice.action === 'heartbeat-change') void this.#onHeartbeatChange(notice, current);
      else this.#maintenance.apply(notice, current.id);
    });
    if (link.closed) {
      // Closed between the upgrade and here: the listener above came too late to hear it.
      this.#onClosed(current, 1006, 'closed right after opening');
      return;
    }
    if (kind === 'rotate')
      this.#o.logger.info('rotated to a new connection', { connection: current.id });
    else this.#o.logger.info('connected', { connection: current.id });
    this.#emit({ type: 'connected', kind, linkId: current.id });
    this.#scheduleRotation();
    this.#schedulePing(current);
    // The last state goes first on the new connection: it is the one the registrar now counts.
    this.#health.resend();
    // Make before break: the new connection is registered (the upgrade succeeds only after
    // $connect did), so closing the old one cannot leave the entry disconnected.
    // The reason lets $disconnect expect another connection to hold the entry: one write.
    if (previous) void previous.link.close(REPLACED_CLOSE_REASON);
    // In the background: a slow describe must not hold up reconnects or rotations.
    void this.#describe(current, kind);
  }

  /**
   * Learns the entry's name and the group's probe; retried while the connection lives. Says
   * `registered as` on every registration (a re-registration says so and why), with the
   * gateway's id of the connection, the one the registrar's own logs and console name.
   */
  async #describe(current: Current, kind: AttemptKind): Promise<void> {
    while (!this.#stopped && !this.#draining && this.#current === current && !current.link.closed) {
      try {
        const reply = await current.link.request('describe');
        // A probe started now would report health that the drain must not see.
        if (this.#draining) return;
        const metadata = (
          reply.entry as { metadata?: { namespace?: string; name?: string } } | undefined
        )?.metadata;
        const name =
          metadata?.name && metadata.namespace
            ? formatRef({ namespace: metadata.namespace, name: metadata.name })
            : '?';
        // A rotation (or the replacement of a connection that held nothing) opens the new
        // connection while the old one still holds the entry; a reconnect follows a loss.
        const line =
          this.#entryName === undefined
            ? `registered as ${name}`
            : `re-registered as ${name} ${kind === 'rotate' ? 'on a new connection' : 'after a reconnect'}`;
        this.#o.logger.info(line, {
          entry: name,
          connection: current.id,
          connectionId: typeof reply.connectionId === 'string' ? reply.connectionId : undefined,
        });
        this.#entryName = name;
        this.#replacements = 0;
        this.#emit({ type: 'registered', name, linkId: current.id });
        this.#maintenance.apply(reply.maintenance, current.id);
        this.#probe.apply((reply.probe as Probe | null | undefined) ?? null);
        this.#applyHeartbeat(reply.heartbeat, current);
        return;
      } catch (error) {
        if (error instanceof RequestError && error.kind === 'closed') return;
        if (isNotRegistered(error)) {
          this.#replace(current, `the registrar says this connection holds no entry`);
          return;
        }
        this.#o.logger.warn('describe failed; asking again', { reason: (error as Error).message });
        await new Promise<void>((resolve) =>
          this.#o.clock.setTimer(this.#o.timing.ackTimeoutMs, resolve),
        );
      }
    }
  }

  #onConnectFailure(error: unknown, kind: AttemptKind): void {
    // Draining: the VM is leaving, so a failed attempt is not retried (nor worth a line).
    if (this.#stopped || this.#draining) return;
    const { clock, logger, timing } = this.#o;
    if (error instanceof NotRegistrarError) {
      this.#onNotRegistrar(error);
      return;
    }
    this.#notRegistrarSaid = undefined;
    const refused =
      (error instanceof RefusedError && REFUSAL_STATUSES.has(error.status)) ||
      error instanceof AuthSetupError;
    let delay: number;
    let reason: string;
    if (refused) {
      // A refusal is an answer: the registrar is up, so the failure count starts over (the
      // refusal has its own, longer backoff).
      this.#failures = 0;
      this.#refusals += 1;
      // A missing group is fixed by an operator's apply alone (an accidental `delete wg`
      // re-applied): retried often enough that the VM is back soon after, without a restart.
      delay =
        error instanceof RefusedError && error.status === 404
          ? missingGroupDelay(this.#refusals, timing, clock.random())
          : refusalDelay(this.#refusals, timing, clock.random());
      // The registrar's own refusal (it names a code) already says what to do; API Gateway's
      // bare `Forbidden`/`Unauthorized` forwards no reason, so the agent adds the likely ones.
      const hint =
        error instanceof RefusedError
          ? this.#o.refusalHint?.(error.status, error.code !== undefined, error.message)
          : undefined;
      reason =
        error instanceof RefusedError
          ? `refused (${error.status}${error.code ? ` ${error.code}` : ''}): ${error.message}`
          : (error as Error).message;
      if (hint) reason = `${reason}; ${hint}`;
      logger.error(`${reason}; retrying in ${seconds(delay)}`, {
        status: error instanceof RefusedError ? error.status : undefined,
      });
    } else {
      this.#failures += 1;
      this.#outage = true;
      delay = failureDelay(this.#failureCount(), timing, clock.random());
      reason = `connect failed: ${describeError(error)}`;
      const still =
        kind === 'rotate' && this.#current ? ' (the current connection stays open)' : '';
      logger.warn(`reconnecting in ${seconds(delay)} because ${reason}${still}`, {
        attempt: this.#failureCount(),
      });
    }
    this.#scheduleRetry(delay, reason, refused, this.#current ? 'rotate' : 'reconnect');
  }

  /**
   * `--url` answers, but not as a registrar (a web page, a redirect, a proxy's error page):
   * only fixing the URL helps, so it waits as long as after a refusal, and says so once.
   */
  #onNotRegistrar(error: NotRegistrarError): void {
    const { clock, logger, timing } = this.#o;
    this.#refusals += 1;
    const delay = refusalDelay(this.#refusals, timing, clock.random());
    const line = `${error.message}; check --url (wss://<api>.execute-api.<region>.amazonaws.com/<stage>, or ws://127.0.0.1:8080 for npm start)`;
    if (line !== this.#notRegistrarSaid) {
      logger.error(
        `${line}; retrying in ${seconds(delay)}, and saying this again only if the answer changes`,
        {
          status: error.status,
          contentType: error.contentType,
        },
      );
      this.#notRegistrarSaid = line;
    } else {
      logger.debug(`the URL still answers HTTP ${error.status}; retrying in ${seconds(delay)}`);
    }
    this.#scheduleRetry(delay, error.message, true, this.#current ? 'rotate' : 'reconnect');
  }

  #onClosed(closed: Current, code: number, reason: string): void {
    this.#links.delete(closed.link);
    this.#emit({ type: 'closed', linkId: closed.id, code });
    // An old connection closing after a rotation is expected and changes nothing.
    if (closed !== this.#current || this.#stopped) return;
    this.#current = undefined;
    this.#rotateTimer?.cancel();
    this.#pingTimer?.cancel();
    const { clock, logger, timing } = this.#o;
    if (this.#draining) {
      // The VM is leaving: a reconnect would register it again. Nothing left to wait for.
      logger.warn(
        `the connection closed while draining (${code}${reason ? ` ${reason}` : ''}); not reconnecting`,
      );
      this.#endDrainDelay?.();
      return;
    }
    // A connection that stayed up for a while ends a run of short-lived ones; one that died
    // young extends it, so a registrar that accepts and drops at once is not retried in a
    // tight loop even though each accept resets #failures.
    if (clock.now() - closed.openedAt >= timing.stableAfterMs) this.#shortLived = 0;
    else this.#shortLived += 1;
    this.#failures += 1;
    const delay = failureDelay(this.#failureCount(), timing, clock.random());
    const why = `the connection closed (${code}${reason ? ` ${reason}` : ''})`;
    if (this.#opening) {
      // A rotation already under way becomes the reconnect; it schedules its own retry if it fails.
      logger.warn(`${why}; a new connection is already being opened`);
      return;
    }
    logger.warn(`reconnecting in ${seconds(delay)} because ${why}`, {
      attempt: this.#failureCount(),
    });
    this.#scheduleRetry(delay, why, false, 'reconnect');
  }

  /** The exponent of the failure backoff: this outage's failures, or the run of young drops. */
  #failureCount(): number {
    return Math.max(this.#failures, this.#shortLived);
  }

  /** Opens a new connection in place of `stale`, which stays open until the new one holds. */
  #replace(stale: Current, reason: string): void {
    if (this.#stopped || this.#draining || this.#current !== stale || this.#replacing === stale)
      return;
    this.#replacing = stale;
    this.#replacements += 1;
    const { clock, logger, timing } = this.#o;
    const delay =
      this.#replacements === 1 ? 0 : failureDelay(this.#replacements - 1, timing, clock.random());
    this.#emit({ type: 'replacing', linkId: stale.id, delayMs: delay, reason });
    if (this.#opening) {
      logger.warn(`${reason}; a new connection is already being opened`);
      return;
    }
    logger.warn(`opening a new connection in ${seconds(delay)} because ${reason}`, {
      connection: stale.id,
    });
    this.#scheduleRetry(delay, reason, false, 'rotate');
  }

  #scheduleRetry(delayMs: number, reason: string, refused: boolean, kind: AttemptKind): void {
    this.#retryTimer?.cancel();
    if (this.#draining) return;
    this.#emit({ type: 'retry-scheduled', delayMs, reason, refused });
    this.#retryTimer = this.#o.clock.setTimer(delayMs, () => this.#attempt(kind));
  }

  #scheduleRotation(): void {
    this.#rotateTimer?.cancel();
    if (this.#draining) return;
    const delay = rotationDelay(this.#o.timing, this.#o.clock.random());
    this.#rotateTimer = this.#o.clock.setTimer(delay, () => this.#attempt('rotate'));
  }

  /**
   * Pings at the interval the registrar names: it closes a connection silent for that interval
   * times its group's miss count. A changed interval takes effect now, not after one more
   * ping at the old pace.
   */
  #applyHeartbeat(heartbeat: unknown, current: Current): void {
    const ms = pingIntervalMs(heartbeat, this.#o.timing.pingIntervalMs);
    if (ms === (this.#pingMs ?? this.#o.timing.pingIntervalMs)) return;
    this.#pingMs = ms;
    this.#o.logger.info('pinging at the interval the registrar named', { intervalMs: ms });
    if (this.#current === current) this.#schedulePing(current);
  }

  /**
   * The registrar tells a changed heartbeat on the live connection (a `heartbeat-change`
   * notice), and holds this connection to it once acknowledged. So that the agent never pings
   * slower than the bound it is held to: a shorter interval is taken before the
   * acknowledgement, a longer one only once the registrar answered `ok` (a lost reply, a
   * refusal, a closed connection: it keeps the shorter one, which satisfies both bounds).
   */
  async #onHeartbeatChange(notice: Reply, current: Current): Promise<void> {
    const told = (notice as { heartbeat?: { intervalSeconds?: unknown; misses?: unknown } })
      .heartbeat;
    const seconds = told?.intervalSeconds;
    const misses = told?.misses;
    if (typeof seconds !== 'number' || typeof misses !== 'number') return;
    if (this.#current !== current || current.link.closed || this.#draining) return;
    const wanted = pingIntervalMs(told, this.#o.timing.pingIntervalMs);
    const shorter = wanted <= (this.#pingMs ?? this.#o.timing.pingIntervalMs);
    if (shorter) this.#applyHeartbeat(told, current);
    try {
      // A reply lost on the way (a timeout) is asked again: the acknowledgement is idempotent,
      // and without its `ok` a longer interval is never taken.
      for (let attempt = 1; ; attempt++) {
        try {
          await current.link.request('heartbeat', { intervalSeconds: seconds, misses });
          break;
        } catch (error) {
          const lost = error instanceof RequestError && error.kind === 'timeout';
          if (!lost || attempt >= ACK_ATTEMPTS || this.#current !== current) throw error;
        }
      }
      if (!shorter) this.#applyHeartbeat(told, current);
      this.#o.logger.info('acknowledged the heartbeat the registrar named', {
        intervalSeconds: seconds,
        misses,
        connection: current.id,
      });
    } catch (error) {
      this.#o.logger.warn(
        'could not acknowledge the heartbeat the registrar named; keeping the current ping',
        {
          reason: (error as Error).message,
          connection: current.id,
        },
      );
    }
  }

  #schedulePing(current: Current): void {
    this.#pingTimer?.cancel();
    const interval = this.#pingMs ?? this.#o.timing.pingIntervalMs;
    this.#pingTimer = this.#o.clock.setTimer(interval, async () => {
      if (this.#current !== current) return;
      this.#schedulePing(current);
      const sentAt = this.#o.clock.now();
      try {
        await current.link.request('ping');
      } catch (error) {
        if (
          error instanceof RequestError &&
          error.kind === 'timeout' &&
          this.#current === current
        ) {
          this.#missedPong(current, sentAt);
        }
      }
    });
  }

  /**
   * A ping went unanswered. The ping is there to find a dead connection, and any frame that
   * arrived since it was sent proves this one alive: above all API Gateway's answer to a
   * throttled ping. The `ping` route's throttle is shared by every agent of the stage, so one
   * tenant flooding it would otherwise make every agent drop its connection and reconnect at
   * once. Only a connection silent for the whole reply timeout is dropped.
   */
  #missedPong(current: Current, sentAt: number): void {
    const { lastReceivedAt, lastGatewayMessage } = current.link;
    if (lastReceivedAt !== undefined && lastReceivedAt >= sentAt) {
      this.#o.logger.warn(
        'no pong from the registrar, but the connection answered since; keeping it',
        {
          connection: current.id,
          ...(lastGatewayMessage !== undefined && lastGatewayMessage.at >= sentAt
            ? { gateway: lastGatewayMessage.text }
            : {}),
        },
      );
      return;
    }
    this.#o.logger.warn('no pong from the registrar; dropping the connection', {
      connection: current.id,
    });
    void current.link.close();
  }

  #emit(event: AgentEvent): void {
    this.#o.onEvent?.({ ...event, at: this.#o.clock.now() });
  }
}

/** A delay as the log says it: `340 ms` under a second (not `0.3 s`, nor `0.0 s`), else `2.5 s`. */
export function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Node's `connect ECONNREFUSED 127.0.0.1:8080` already names its code: said once. */
export function describeError(error: unknown): string {
  if (error instanceof RefusedError) return `HTTP ${error.status}: ${error.message}`;
  const code = (error as NodeJS.ErrnoException).code;
  const message = (error as Error).message;
  return code && !message.includes(code) ? `${code} ${message}` : message;
}
