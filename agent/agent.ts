import { type Authenticator, createAuthenticator } from './auth.ts';
import { type Clock, systemClock } from './clock.ts';
import type { AgentConfig } from './config.ts';
import { buildConnectUrl } from './connect-url.ts';
import { openLink } from './connection.ts';
import { type Discovered, discover } from './discovery.ts';
import { loadIdentityEvidence } from './identity-evidence.ts';
import { createLogger, type Logger, redactUrl } from './logger.ts';
import type { ReclaimOutcome } from './memory-reclaim.ts';
import { createProbeCheck } from './probes/probe-runner.ts';
import { execPolicy } from './probes/probe-user.ts';
import { refusalHint } from './refusal-hints.ts';
import {
  redactSidecarToken,
  rootWarning,
  SidecarBootstrapper,
  type SidecarEvent,
} from './sidecar-bootstrap.ts';
import { type AgentEvent, Supervisor } from './supervisor.ts';
import { AGENT_VERSION } from './version.ts';

export interface AgentDependencies {
  clock?: Clock;
  logger?: Logger;
  /** Replaces IMDS discovery (tests). */
  discover?: (config: AgentConfig, logger: Logger) => Promise<Discovered>;
  /** Replaces the configured authentication (tests). */
  authenticator?: Authenticator;
  onEvent?: (event: AgentEvent & { at: number }) => void;
  /** Sees what the sidecar bootstrap does (tests). */
  onSidecarEvent?: (event: SidecarEvent & { at: number }) => void;
  /**
   * Gives the start-up's memory back to the kernel, `timing.memoryReclaimAfter` after the first
   * registration (agent/memory-reclaim.ts). The program passes it; an agent started inside
   * another process (tests) leaves that process's memory alone.
   */
  reclaimMemory?: () => Promise<ReclaimOutcome>;
}

export interface RunningAgent {
  supervisor: Supervisor;
  /** The connect URL without credentials. */
  connectUrl: string;
  /** Closes at once (a second signal, tests). */
  stop(): Promise<void>;
  /** Tells the registrar the VM is leaving, waits the drain delay, then closes (SIGTERM). */
  drainAndStop(): Promise<void>;
}

/** Discovers, authenticates and starts the supervisor: the whole agent minus signals. */
export async function startAgent(
  config: AgentConfig,
  deps: AgentDependencies = {},
): Promise<RunningAgent> {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? createLogger({ format: config.logFormat, debug: config.debug });
  const found = await (deps.discover ?? discover)(config, logger);
  const connectUrl = buildConnectUrl(config.url, {
    group: config.group,
    namespace: config.namespace,
    ips: found.ips,
    labels: found.labels,
    ...(config.network ? { network: config.network } : {}),
    ...(found.locality ? { locality: found.locality } : {}),
    agentVersion: AGENT_VERSION,
  });
  const evidence = deps.authenticator ? undefined : await loadIdentityEvidence(config, logger);
  const auth =
    deps.authenticator ??
    (await createAuthenticator(config.auth, config.url, found.region, evidence?.headers, {
      baseUrl: config.imds.url,
      timeoutMs: config.imds.timeoutMs,
    }));
  logger.info(`joining ${config.namespace}/${config.group}`, {
    url: redactUrl(config.url),
    address: found.ips.join(','),
    locality: found.locality,
    auth: config.auth.mode,
    ...(config.auth.mode === 'iam' && evidence ? { identityDocument: evidence.source } : {}),
  });
  // Decided once, before any probe can run: who a group's exec command runs as, if at all.
  const exec = await execPolicy({
    probeUser: config.probeUser,
    sidecar: config.sidecar?.enabled === true,
  });
  const supervisor = new Supervisor({
    clock,
    logger,
    timing: config.timing,
    open: async () => {
      const prepared = await auth.prepare(connectUrl);
      return openLink(prepared.url, prepared.headers, {
        clock,
        connectTimeoutMs: config.timing.connectTimeoutMs,
        replyTimeoutMs: config.timing.ackTimeoutMs,
        trace: (direction, text) => logger.debug(`${direction} ${redactSidecarToken(text)}`),
      });
    },
    refusalHint: (status, reasonGiven, message) =>
      refusalHint(status, { auth: config.auth, namespace: config.namespace }, reasonGiven, message),
    // The probe's "pod IP" is the VM itself.
    createCheck: (probe, settings) => createProbeCheck(probe, settings, exec),
    onEvent: (event) => {
      deps.onEvent?.(event);
      // Every registration (start, reconnect, rotation) refreshes the sidecar's identity.
      if (event.type === 'registered') {
        sidecar?.onRegistered();
        scheduleReclaim();
      }
    },
  });
  // Once, after the first registration: by then start-up (discovery, signing, TLS, the first
  // probe) has read what it reads once, and what the agent keeps using comes back on its own.
  let reclaim: ReturnType<typeof clock.setTimer> | 'done' | undefined;
  const scheduleReclaim = () => {
    const run = deps.reclaimMemory;
    const after = config.timing.memoryReclaimAfterMs;
    if (reclaim !== undefined || !run || after <= 0) return;
    reclaim = clock.setTimer(after, () => {
      reclaim = 'done';
      run().then(
        (outcome) =>
          outcome.done
            ? logger.info('gave the start-up memory back to the kernel', {
                rssBeforeMb: outcome.rssBeforeMb,
                rssAfterMb: outcome.rssAfterMb,
                tookMs: outcome.tookMs,
                cgroup: outcome.cgroup,
              })
            : logger.info(`kept the start-up memory: ${outcome.reason}`),
        (error: Error) => logger.warn(`kept the start-up memory: ${error.message}`),
      );
    });
  };
  const cancelReclaim = () => {
    if (reclaim !== undefined && reclaim !== 'done') reclaim.cancel();
    reclaim = 'done';
  };
  const asRoot = config.sidecar && rootWarning(config.sidecar, process.geteuid?.() ?? 0);
  if (asRoot) logger.warn(asRoot);
  const sidecar = config.sidecar?.enabled
    ? new SidecarBootstrapper({
        config: config.sidecar,
        clock,
        logger,
        timing: config.timing,
        currentLink: () => supervisor.link,
        ...(deps.onSidecarEvent ? { onEvent: deps.onSidecarEvent } : {}),
      })
    : undefined;
  supervisor.start();
  return {
    supervisor,
    connectUrl,
    stop: async () => {
      cancelReclaim();
      sidecar?.stop();
      await supervisor.stop();
      logger.info('stopped');
    },
    drainAndStop: async () => {
      cancelReclaim();
      sidecar?.stop();
      await supervisor.drainAndStop();
      logger.info('stopped');
    },
  };
}
