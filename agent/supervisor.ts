import type { Probe } from '../lib/domain/model.ts';
import type { Clock, Timer } from './clock.ts';
import type { AgentTiming } from './config.ts';
import { type AgentLink, isNotRegistered, RequestError } from './connection.ts';
import { HealthReporter } from './health-reporter.ts';
import type { Logger } from './logger.ts';
import { MaintenanceNotices } from './maintenance-notices.ts';
import { ProbeWatcher } from './probe-watcher.ts';
import type { ProbeCheck } from './probes/probe-result.ts';
import type { ProbeSettings } from './probes/probe-runner.ts';
import { describedReply, openFailure, type RefusalHint } from './supervisor-inputs.ts';
import { seconds, transition } from './supervisor-machine.ts';
import {
  type AgentEvent,
  type Effect,
  initialState,
  type MachineEvent,
  type MachineState,
  type TimerName,
} from './supervisor-state.ts';

export { describeError } from './supervisor-inputs.ts';
export { seconds } from './supervisor-machine.ts';
export type { AgentEvent } from './supervisor-state.ts';

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
  refusalHint?: RefusalHint;
  onEvent?: (event: AgentEvent & { at: number }) => void;
}

/**
 * Keeps exactly one registered connection, and the health it reports, alive for as long as
 * the agent runs. What to do is decided by `transition` (supervisor-machine.ts), a pure state
 * machine whose states, events and timers are data (supervisor-state.ts; docs/agent.md names
 * them); this class is its shell: it turns sockets, replies and timers into events, and
 * performs the effects the machine asks for (open, close, send, arm and cancel timers, log).
 */
export class Supervisor {
  readonly #o: SupervisorOptions;
  readonly #health: HealthReporter;
  readonly #probe: ProbeWatcher;
  /** An operator's cordon, as the registrar tells it: logged once per change. */
  readonly #maintenance: MaintenanceNotices;
  /** Every connection opened and not yet closed, by the machine's id; `stop` closes them all. */
  readonly #links = new Map<number, AgentLink>();
  readonly #timers = new Map<TimerName, Timer>();
  #state: MachineState = initialState();
  /**
   * The connection the machine counts as current, kept after it closed (as `#links` is not)
   * until the machine names another: the health reporter and `link` ask for it.
   */
  #current: AgentLink | undefined;
  #linkSeq = 0;
  /** Events raised while effects are performed wait their turn: one transition at a time. */
  readonly #queue: MachineEvent[] = [];
  #dispatching = false;
  /** Settles once the current attempt's outcome was handled; `stop` waits for it. */
  #attemptDone: Promise<void> = Promise.resolve();
  /** Ends the drain delay early (stop, or the connection lost while draining). */
  #endDrainDelay: (() => void) | undefined;

  constructor(options: SupervisorOptions) {
    this.#o = options;
    this.#maintenance = new MaintenanceNotices(options.logger);
    this.#health = new HealthReporter({
      clock: options.clock,
      logger: options.logger,
      retryDelayMs: options.timing.ackTimeoutMs,
      currentLink: () => this.link,
      onEvent: (event) => {
        if (event.type === 'health-acked') this.#dispatch({ type: 'health-acked' });
        this.#emit(event);
      },
      onStuck: (link, reason) => {
        const current = this.#state.current;
        if (current && this.#current === link)
          this.#dispatch({ type: 'link-stuck', linkId: current.id, reason });
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
    return this.#state.entryName;
  }

  /** The connection the registrar counts now (the sidecar bootstrap asks on it). */
  get link(): AgentLink | undefined {
    return this.#current;
  }

  /** The machine's state, for tests and diagnostics. */
  get state(): MachineState {
    return this.#state;
  }

  /** Read through a call: TypeScript would narrow the field across an `await` it cannot see through. */
  #lifecycle(): MachineState['lifecycle'] {
    return this.#state.lifecycle;
  }

  start(): void {
    this.#dispatch({ type: 'start' });
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
    const { lifecycle } = this.#state;
    if (lifecycle === 'stopped' || lifecycle === 'draining') return;
    const { timing } = this.#o;
    if (timing.drainDelayMs > 0) {
      this.#dispatch({ type: 'drain' });
      await this.#drain(timing.drainDelayMs);
    }
    await this.stop();
  }

  async #drain(delayMs: number): Promise<void> {
    const { logger, timing } = this.#o;
    // An upgrade under way (a rotation, a reconnect) settles first, so that the drain goes
    // on the connection the registrar counts: a connect that landed after the drain would
    // cancel it.
    await this.#attemptDone;
    if (this.#lifecycle() === 'stopped') return;
    const current = this.#state.current;
    const link = this.link;
    if (current === undefined || link === undefined || link.closed) {
      logger.info('draining: not connected, so nothing to tell the registrar; stopping');
      return;
    }
    this.#emit({ type: 'drain-sent', linkId: current.id });
    try {
      await link.request('drain');
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
    // `stop` may have come while the registrar answered (the machine's state moved on).
    if (this.#lifecycle() === 'stopped' || link.closed) return;
    await new Promise<void>((resolve) => {
      this.#endDrainDelay = resolve;
      this.#dispatch({ type: 'hold-drain', ms: delayMs });
    });
    this.#endDrainDelay = undefined;
  }

  /** Closes every connection cleanly (the registrar runs $disconnect) and stops all timers. */
  async stop(): Promise<void> {
    this.#dispatch({ type: 'stop' });
    await this.#attemptDone;
    await Promise.all([...this.#links.values()].map((link) => link.close()));
  }

  /** Runs one transition per event, in order; an event raised by an effect waits its turn. */
  #dispatch(event: MachineEvent): void {
    this.#queue.push(event);
    if (this.#dispatching) return;
    this.#dispatching = true;
    try {
      for (let next = this.#queue.shift(); next; next = this.#queue.shift()) {
        const { clock, timing } = this.#o;
        const context = { now: clock.now(), random: () => clock.random(), timing };
        const { state, effects } = transition(this.#state, next, context);
        if (state.current?.id !== this.#state.current?.id)
          this.#current = state.current ? this.#links.get(state.current.id) : undefined;
        this.#state = state;
        for (const effect of effects) this.#perform(effect);
      }
    } finally {
      this.#dispatching = false;
    }
  }

  #perform(effect: Effect): void {
    const { clock, logger } = this.#o;
    switch (effect.type) {
      case 'open':
        this.#open();
        return;
      case 'watch':
        this.#watch(effect.linkId);
        return;
      case 'close':
        void this.#links.get(effect.linkId)?.close(effect.reason);
        return;
      case 'describe':
        void this.#describe(effect.linkId);
        return;
      case 'ping':
        void this.#ping(effect.linkId, effect.sentAt);
        return;
      case 'ack-heartbeat':
        void this.#ackHeartbeat(effect);
        return;
      case 'arm': {
        this.#timers.get(effect.timer)?.cancel();
        const { timer, token } = effect;
        this.#timers.set(
          timer,
          clock.setTimer(effect.ms, () => this.#dispatch({ type: 'timer-fired', timer, token })),
        );
        return;
      }
      case 'cancel':
        this.#timers.get(effect.timer)?.cancel();
        this.#timers.delete(effect.timer);
        return;
      case 'log':
        logger[effect.level](effect.message, effect.fields);
        return;
      case 'emit':
        this.#emit(effect.event);
        return;
      case 'health-resend':
        this.#health.resend();
        return;
      case 'health-stop':
        this.#health.stop();
        return;
      case 'probe-stop':
        this.#probe.stop();
        return;
      case 'probe-apply':
        this.#probe.apply((effect.probe as Probe | null | undefined) ?? null);
        return;
      case 'maintenance':
        this.#maintenance.apply(effect.maintenance, effect.linkId);
        return;
      case 'end-drain':
        this.#endDrainDelay?.();
        return;
    }
  }

  #open(): void {
    this.#attemptDone = this.#o.open().then(
      (link) => {
        const linkId = ++this.#linkSeq;
        this.#links.set(linkId, link);
        this.#dispatch({ type: 'opened', linkId, closed: link.closed });
      },
      (error: unknown) => {
        this.#dispatch({ type: 'open-failed', failure: openFailure(error, this.#o.refusalHint) });
      },
    );
  }

  /** Hears the connection's close and the registrar's notices on it. */
  #watch(linkId: number): void {
    const link = this.#links.get(linkId);
    if (!link) return;
    // Closed before the listener below could hear it: the machine was told (`opened`).
    if (link.closed) this.#links.delete(linkId);
    link.onClose((code, reason) => {
      this.#links.delete(linkId);
      this.#dispatch({ type: 'closed', linkId, code, reason });
    });
    link.onNotice?.((notice) => {
      if (notice.action !== 'heartbeat-change') {
        this.#maintenance.apply(notice, linkId);
        return;
      }
      const told = (notice as { heartbeat?: { intervalSeconds?: unknown; misses?: unknown } })
        .heartbeat;
      const intervalSeconds = told?.intervalSeconds;
      const misses = told?.misses;
      if (typeof intervalSeconds !== 'number' || typeof misses !== 'number') return;
      if (link.closed) return;
      this.#dispatch({ type: 'heartbeat-told', linkId, intervalSeconds, misses });
    });
  }

  /** Asks for the entry's name and the group's probe; the machine decides what follows. */
  async #describe(linkId: number): Promise<void> {
    const link = this.#links.get(linkId);
    if (!link || link.closed) return;
    try {
      const reply = await link.request('describe');
      this.#dispatch({ type: 'described', linkId, reply: describedReply(reply) });
    } catch (error) {
      const failure =
        error instanceof RequestError && error.kind === 'closed'
          ? 'closed'
          : isNotRegistered(error)
            ? 'not-registered'
            : 'error';
      this.#dispatch({
        type: 'describe-failed',
        linkId,
        failure,
        message: (error as Error).message,
      });
    }
  }

  async #ping(linkId: number, sentAt: number): Promise<void> {
    const link = this.#links.get(linkId);
    if (!link) return;
    try {
      await link.request('ping');
    } catch (error) {
      if (!(error instanceof RequestError && error.kind === 'timeout')) return;
      const { lastReceivedAt, lastGatewayMessage } = link;
      this.#dispatch({
        type: 'pong-missed',
        linkId,
        answeredSince: lastReceivedAt !== undefined && lastReceivedAt >= sentAt,
        gateway:
          lastGatewayMessage !== undefined && lastGatewayMessage.at >= sentAt
            ? lastGatewayMessage.text
            : undefined,
      });
    }
  }

  async #ackHeartbeat(effect: Extract<Effect, { type: 'ack-heartbeat' }>): Promise<void> {
    const { linkId, ackId, intervalSeconds, misses } = effect;
    const link = this.#links.get(linkId);
    try {
      if (!link) throw new RequestError('closed', 'closed');
      await link.request('heartbeat', { intervalSeconds, misses });
      this.#dispatch({ type: 'heartbeat-answered', ackId, outcome: 'ok', message: 'ok' });
    } catch (error) {
      const lost = error instanceof RequestError && error.kind === 'timeout';
      this.#dispatch({
        type: 'heartbeat-answered',
        ackId,
        outcome: lost ? 'lost' : 'failed',
        message: (error as Error).message,
      });
    }
  }

  #emit(event: AgentEvent): void {
    this.#o.onEvent?.({ ...event, at: this.#o.clock.now() });
  }
}
