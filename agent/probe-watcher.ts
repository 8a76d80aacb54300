import type { Probe } from '../lib/domain/model.ts';
import type { Clock } from './clock.ts';
import type { Logger } from './logger.ts';
import type { ProbeCheck } from './probes/probe-result.ts';
import {
  type HealthState,
  ProbeRunner,
  type ProbeSettings,
  probeSettings,
} from './probes/probe-runner.ts';

export interface ProbeWatcherOptions {
  clock: Clock;
  logger: Logger;
  probeTimeScale: number;
  createCheck: (probe: Probe, settings: ProbeSettings) => ProbeCheck | undefined;
  onState: (state: HealthState) => void;
  onNoProbe: () => void;
}

/**
 * Runs the group's probe as `describe` reports it. Every (re)connect asks again, so a probe
 * changed with `registrar apply` takes effect at the next rotation at the latest; the same
 * probe keeps its runner (and its threshold counts) across reconnects.
 */
export class ProbeWatcher {
  readonly #o: ProbeWatcherOptions;
  #key: string | undefined;
  #runner: ProbeRunner | undefined;

  constructor(options: ProbeWatcherOptions) {
    this.#o = options;
  }

  apply(probe: Probe | null): void {
    const key = JSON.stringify(probe);
    if (key === this.#key) return;
    this.#key = key;
    this.#runner?.stop();
    this.#runner = undefined;
    const { clock, logger } = this.#o;
    if (probe === null) {
      // No probe in the group: the entry carries no Healthy condition, so send nothing.
      logger.info('the group has no probe; not reporting health');
      this.#o.onNoProbe();
      return;
    }
    const settings = probeSettings(probe, this.#o.probeTimeScale);
    const check = this.#o.createCheck(probe, settings);
    if (!check) {
      logger.error('the group probe has none of httpGet, tcpSocket or exec; not reporting health');
      this.#o.onNoProbe();
      return;
    }
    logger.info(`probing ${describeProbe(probe)}`, {
      periodMs: settings.periodMs,
      timeoutMs: settings.timeoutMs,
      successThreshold: settings.successThreshold,
      failureThreshold: settings.failureThreshold,
    });
    this.#runner = new ProbeRunner({
      clock,
      check,
      settings,
      onTransition: (state) => {
        if (state.healthy) logger.info('healthy');
        else logger.warn(`unhealthy: ${state.message ?? 'probe failed'}`);
        this.#o.onState(state);
      },
    });
    this.#runner.start();
  }

  stop(): void {
    this.#runner?.stop();
  }
}

function describeProbe(probe: Probe): string {
  if (probe.httpGet)
    return `httpGet ${probe.httpGet.scheme ?? 'HTTP'} port ${probe.httpGet.port} ${probe.httpGet.path ?? '/'}`;
  if (probe.tcpSocket) return `tcpSocket port ${probe.tcpSocket.port}`;
  if (probe.exec) return `exec ${probe.exec.command.join(' ')}`;
  return 'nothing';
}
