import type { Probe } from '../../lib/domain/model.ts';
import type { Clock, Timer } from '../clock.ts';
import { execProbe } from './exec-probe.ts';
import { httpProbe } from './http-probe.ts';
import type { ProbeCheck, ProbeResult } from './probe-result.ts';
import type { ExecPolicy } from './probe-user.ts';
import { tcpProbe } from './tcp-probe.ts';

/** A health state worth reporting: what the agent sends as `{"action":"health",...}`. */
export interface HealthState {
  healthy: boolean;
  message?: string;
}

export interface ProbeSettings {
  initialDelayMs: number;
  periodMs: number;
  timeoutMs: number;
  successThreshold: number;
  failureThreshold: number;
}

// Kubernetes defaults: period 10 s, timeout 1 s, success 1, failure 3, no initial delay.
const DEFAULTS = { periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 };

/** The probe's timing with Kubernetes defaults; `scale` < 1 shortens seconds for tests. */
export function probeSettings(probe: Probe, scale = 1): ProbeSettings {
  const positive = (value: number | undefined, fallback: number) =>
    value !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
  const count = (value: number | undefined, fallback: number) =>
    Math.max(1, Math.floor(positive(value, fallback)));
  return {
    initialDelayMs: Math.max(0, probe.initialDelaySeconds ?? 0) * 1000 * scale,
    periodMs: positive(probe.periodSeconds, DEFAULTS.periodSeconds) * 1000 * scale,
    timeoutMs: positive(probe.timeoutSeconds, DEFAULTS.timeoutSeconds) * 1000 * scale,
    successThreshold: count(probe.successThreshold, DEFAULTS.successThreshold),
    failureThreshold: count(probe.failureThreshold, DEFAULTS.failureThreshold),
  };
}

/**
 * One attempt of the group's probe. `defaultHost` stands for Kubernetes' "pod IP" when the
 * probe names no host; for a VM that is the machine itself, reached as localhost as Istio's
 * agent does, so an application bound to 127.0.0.1 can be probed too.
 */
export function createProbeCheck(
  probe: Probe,
  settings: ProbeSettings,
  exec: ExecPolicy = { runAs: undefined },
  defaultHost = 'localhost',
): ProbeCheck | undefined {
  if (probe.httpGet) {
    const action = probe.httpGet;
    return () => httpProbe(action, defaultHost, settings.timeoutMs);
  }
  if (probe.tcpSocket) {
    const action = probe.tcpSocket;
    return () => tcpProbe(action, defaultHost, settings.timeoutMs);
  }
  if (probe.exec) {
    const action = probe.exec;
    if ('refused' in exec) {
      const refusal = { ok: false, message: exec.refused };
      return () => Promise.resolve(refusal);
    }
    return () => execProbe(action, settings.timeoutMs, exec.runAs);
  }
  return undefined;
}

export interface ProbeRunnerOptions {
  clock: Clock;
  check: ProbeCheck;
  settings: ProbeSettings;
  /** Called only when the reported state changes (and once for the first state). */
  onTransition: (state: HealthState, result: ProbeResult) => void;
}

/**
 * Runs a check every period and applies the thresholds: the first state is reported after
 * `successThreshold` successes or `failureThreshold` failures in a row, and later states only
 * when they flip by the same rule. Attempts never overlap: a check slower than the period
 * delays the next one instead of piling up (the kubelet skips ticks the same way).
 */
export class ProbeRunner {
  readonly #options: ProbeRunnerOptions;
  #timer: Timer | undefined;
  #running = false;
  #reported: boolean | undefined;
  #successes = 0;
  #failures = 0;

  constructor(options: ProbeRunnerOptions) {
    this.#options = options;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule(this.#options.settings.initialDelayMs);
  }

  stop(): void {
    this.#running = false;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #schedule(delayMs: number): void {
    this.#timer = this.#options.clock.setTimer(delayMs, () => void this.#attempt());
  }

  async #attempt(): Promise<void> {
    if (!this.#running) return;
    const { clock, check, settings } = this.#options;
    const startedAt = clock.now();
    const result = await check();
    // Stopped while the check ran (probe changed, agent shutting down): drop the result.
    if (!this.#running) return;
    this.#record(result);
    const elapsed = clock.now() - startedAt;
    this.#schedule(Math.max(0, settings.periodMs - elapsed));
  }

  #record(result: ProbeResult): void {
    const { settings, onTransition } = this.#options;
    if (result.ok) {
      this.#successes += 1;
      this.#failures = 0;
      if (this.#reported !== true && this.#successes >= settings.successThreshold) {
        this.#reported = true;
        onTransition({ healthy: true }, result);
      }
    } else {
      this.#failures += 1;
      this.#successes = 0;
      if (this.#reported !== false && this.#failures >= settings.failureThreshold) {
        this.#reported = false;
        onTransition({ healthy: false, message: result.message }, result);
      }
    }
  }
}
