import { failureDelay } from './backoff.ts';
import type { LogFields, LogLevel } from './logger.ts';
import {
  type AgentEvent,
  type AttemptKind,
  type CurrentLink,
  type Effect,
  type MachineContext,
  type MachineState,
  phaseOf,
  type TimerName,
} from './supervisor-state.ts';

export interface Transition {
  state: MachineState;
  effects: Effect[];
}

/**
 * One transition under way: a private copy of the state, the effects asked so far, and the
 * moves more than one part of the machine makes (arm, cancel, retry, replace). The machine
 * (supervisor-machine.ts) and the keepalive (supervisor-keepalive.ts) build on it.
 */
export class Step {
  readonly s: MachineState;
  readonly fx: Effect[] = [];
  readonly c: MachineContext;

  constructor(state: MachineState, context: MachineContext) {
    this.s = { ...state, timers: { ...state.timers }, acks: { ...state.acks } };
    this.c = context;
  }

  result(): Transition {
    this.s.phase = phaseOf(this.s);
    return { state: this.s, effects: this.fx };
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

  /** Opens a new connection in place of `stale`, which stays open until the new one holds. */
  replace(stale: CurrentLink, reason: string): void {
    if (!this.running || this.s.current !== stale || this.s.replacing === stale.id) return;
    this.s.replacing = stale.id;
    this.s.replacements += 1;
    const delay =
      this.s.replacements === 1
        ? 0
        : failureDelay(this.s.replacements - 1, this.c.timing, this.c.random());
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
}

/** A delay as the log says it: `340 ms` under a second (not `0.3 s`, nor `0.0 s`), else `2.5 s`. */
export function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
