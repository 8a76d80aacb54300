import type { AgentTiming } from './config.ts';
import type { LogFields, LogLevel } from './logger.ts';

/**
 * The supervisor's state machine, as data: its states, the events that move it, the effects
 * it asks for, and its timers. `transition` (supervisor-machine.ts) is the logic; the
 * `Supervisor` class only performs effects and turns sockets, replies and timers into events.
 */

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

/** Why a connection is opened: the first, after a loss, or beside a live one (make before break). */
export type AttemptKind = 'start' | 'reconnect' | 'rotate';

/**
 * The named states, derived from the data below after every transition (so they can never
 * disagree with it):
 * - `idle`: not started;
 * - `connecting`: an upgrade is under way and no connection holds the entry;
 * - `backing-off`: no connection, waiting for the retry timer;
 * - `connected`: one connection holds the entry, no upgrade under way;
 * - `rotating`: a connection holds the entry while a second one is opened (make before break);
 * - `draining`: the VM is leaving; nothing reconnects, rotates or reports health;
 * - `stopped`: every timer cancelled, every connection closed or closing.
 */
export type Phase =
  | 'idle'
  | 'connecting'
  | 'backing-off'
  | 'connected'
  | 'rotating'
  | 'draining'
  | 'stopped';

/**
 * The timers, by name. At most one of each is armed; arming one again replaces it.
 * - `retry`: the next connection attempt (backoff, or a replacement's delay);
 * - `rotate`: the make-before-break rotation before API Gateway's age limit;
 * - `ping`: the keepalive on the current connection;
 * - `describe`: asking `describe` again after it failed;
 * - `drain`: the drain delay, after which the agent closes.
 */
export type TimerName = 'retry' | 'rotate' | 'ping' | 'describe' | 'drain';

export interface ArmedTimer {
  /** Names this arming: a fire whose token is not the armed one is late, and ignored. */
  token: number;
  ms: number;
  /** For `retry`: the kind of the attempt it starts. */
  kind?: AttemptKind;
  /** For `ping`: the connection it keeps alive. */
  linkId?: number;
}

export interface CurrentLink {
  id: number;
  openedAt: number;
  /** The attempt that opened it (the `registered` line says why it re-registered). */
  kind: AttemptKind;
}

/** A heartbeat acknowledgement under way (see `heartbeat-told`). */
export interface PendingAck {
  linkId: number;
  intervalSeconds: number;
  misses: number;
  /** The told interval is no longer than the one in use: it was taken before the `ok`. */
  shorter: boolean;
  attempt: number;
}

export interface MachineState {
  phase: Phase;
  lifecycle: 'idle' | 'running' | 'draining' | 'stopped';
  /** The upgrade under way, if any. */
  attempt: { kind: AttemptKind } | undefined;
  current: CurrentLink | undefined;
  /** The connection being replaced because it held nothing (make before break). */
  replacing: number | undefined;
  timers: Partial<Record<TimerName, ArmedTimer>>;
  nextToken: number;
  /** The ping interval the registrar named (its group's heartbeat); undefined: configured. */
  pingMs: number | undefined;
  /** Failed attempts and lost connections since the registrar last answered. */
  failures: number;
  /**
   * Accepted connections in a row that closed before `stableAfterMs`. Kept apart from
   * `failures`, which an accepted connection resets: a registrar that accepts and then drops
   * every connection still backs the agent off exponentially.
   */
  shortLived: number;
  /** An attempt failed since the registrar last answered: the next accept ends an outage. */
  outage: boolean;
  refusals: number;
  /** Connections replaced in a row because they held nothing; reset once one is proven. */
  replacements: number;
  entryName: string | undefined;
  /**
   * The last "not a registrar" line logged: a URL that keeps answering a web page is said
   * once, not on every retry (the page itself is never logged).
   */
  notRegistrarSaid: string | undefined;
  acks: Record<number, PendingAck>;
  nextAckId: number;
}

/** Why an upgrade failed, as the shell classified the error. */
export type OpenFailure =
  | {
      kind: 'refused';
      /** The log line's reason: the registrar's refusal and, where it gave none, a hint. */
      reason: string;
      status: number | undefined;
      /** 404 `cannot find WorkloadGroup`: an operator's apply fixes it, so retried sooner. */
      missingGroup: boolean;
    }
  | { kind: 'not-registrar'; message: string; status: number; contentType: string | undefined }
  | { kind: 'failed'; description: string };

/** The `describe` reply, as far as the supervisor reads it. */
export interface Described {
  name: string;
  connectionId: string | undefined;
  maintenance: unknown;
  probe: unknown;
  heartbeat: unknown;
}

export type MachineEvent =
  | { type: 'start' }
  | { type: 'opened'; linkId: number; closed: boolean }
  | { type: 'open-failed'; failure: OpenFailure }
  | { type: 'closed'; linkId: number; code: number; reason: string }
  | { type: 'timer-fired'; timer: TimerName; token: number }
  | { type: 'described'; linkId: number; reply: Described }
  | {
      type: 'describe-failed';
      linkId: number;
      failure: 'closed' | 'not-registered' | 'error';
      message: string;
    }
  | { type: 'pong-missed'; linkId: number; answeredSince: boolean; gateway: string | undefined }
  | { type: 'heartbeat-told'; linkId: number; intervalSeconds: number; misses: number }
  | {
      type: 'heartbeat-answered';
      ackId: number;
      outcome: 'ok' | 'lost' | 'failed';
      message: string;
    }
  | { type: 'health-acked' }
  | { type: 'link-stuck'; linkId: number; reason: string }
  | { type: 'drain' }
  | { type: 'hold-drain'; ms: number }
  | { type: 'stop' };

export type Effect =
  | { type: 'open' }
  /** Listen to the connection's close and notices. */
  | { type: 'watch'; linkId: number }
  | { type: 'close'; linkId: number; reason?: string }
  | { type: 'describe'; linkId: number }
  | { type: 'ping'; linkId: number; sentAt: number }
  | {
      type: 'ack-heartbeat';
      linkId: number;
      ackId: number;
      intervalSeconds: number;
      misses: number;
    }
  | { type: 'arm'; timer: TimerName; ms: number; token: number }
  | { type: 'cancel'; timer: TimerName }
  | { type: 'log'; level: LogLevel; message: string; fields?: LogFields }
  | { type: 'emit'; event: AgentEvent }
  | { type: 'health-resend' | 'health-stop' | 'probe-stop' }
  | { type: 'probe-apply'; probe: unknown }
  | { type: 'maintenance'; maintenance: unknown; linkId: number }
  /** Ends the drain delay: the shell's `drainAndStop` goes on to close. */
  | { type: 'end-drain' };

/** What a transition may read besides the state: time, jitter and the configured timing. */
export interface MachineContext {
  now: number;
  random: () => number;
  timing: AgentTiming;
}

export function initialState(): MachineState {
  return {
    phase: 'idle',
    lifecycle: 'idle',
    attempt: undefined,
    current: undefined,
    replacing: undefined,
    timers: {},
    nextToken: 1,
    pingMs: undefined,
    failures: 0,
    shortLived: 0,
    outage: false,
    refusals: 0,
    replacements: 0,
    entryName: undefined,
    notRegistrarSaid: undefined,
    acks: {},
    nextAckId: 1,
  };
}

/** The named state the data amounts to. */
export function phaseOf(state: MachineState): Phase {
  if (state.lifecycle !== 'running') return state.lifecycle;
  if (state.current) return state.attempt ? 'rotating' : 'connected';
  return state.attempt ? 'connecting' : 'backing-off';
}
