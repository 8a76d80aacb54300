import { spawn } from 'node:child_process';
import { NotRegisteredError } from '../lib/domain/errors.ts';
import {
  readSidecarReply,
  SIDECAR_ERROR_CODES,
  type SidecarReply,
} from '../lib/protocol/sidecar-message.ts';
import { failureDelay, refusalDelay } from './backoff.ts';
import type { Clock, Timer } from './clock.ts';
import type { AgentTiming } from './config.ts';
import { type AgentLink, RequestError } from './connection.ts';
import type { Logger } from './logger.ts';
import { fullPaths, resolveOwner, writeBootstrap, writeToken } from './sidecar-files.ts';
import type { SidecarConfig } from './sidecar-settings.ts';
import type { Owner } from './system-users.ts';

/** What happened, for tests; the log says the same for people (never the token). */
export type SidecarEvent =
  | { type: 'sidecar-written'; written: string[]; unchanged: string[]; notWritten: string[] }
  | { type: 'token-written'; expiresAt: string; refreshInMs: number }
  | { type: 'sidecar-refused'; code: string; retryInMs: number | undefined }
  | { type: 'sidecar-failed'; reason: string; retryInMs: number }
  | { type: 'sidecar-command'; exitCode: number | null };

export interface SidecarBootstrapperOptions {
  config: SidecarConfig;
  clock: Clock;
  logger: Logger;
  timing: AgentTiming;
  /** The connection the registrar counts now; asked on, never kept. */
  currentLink: () => AgentLink | undefined;
  /** Runs the post-change command; default /bin/sh -c with a 60 s limit. */
  runCommand?: (command: string) => Promise<number | null>;
  onEvent?: (event: SidecarEvent & { at: number }) => void;
}

/** The codes after which asking again soon cannot help (someone has to change something). */
const REFUSALS = new Set<string>([
  'Forbidden',
  'InvalidMessage',
  'InvalidRequest',
  SIDECAR_ERROR_CODES.noServiceAccount,
  SIDECAR_ERROR_CODES.unavailable,
]);

/**
 * Keeps this VM's Istio sidecar bootstrapped and its mesh identity fresh. It asks the
 * registrar (`sidecar`) on every registration (start, reconnect, rotation: a new connection
 * may meet a registrar whose settings or root certificate changed), and again well before the
 * token expires (at 70-80 % of its lifetime, jittered so a fleet does not refresh in step).
 * Each answer's files are written atomically, unchanged ones left alone; the post-change
 * command runs only when a bootstrap file changed, not for a token (istio-agent reads the
 * token file each time it asks istiod for a certificate).
 *
 * A registrar without the action (an older version) or without a cluster is said once and
 * registration goes on as before; refusals wait as long as refused connects do; failures
 * (timeouts, unwritable files) back off like failed connects. Nothing here ever closes or
 * replaces the connection: the mesh identity must never cost the VM its registration.
 */
export class SidecarBootstrapper {
  readonly #o: SidecarBootstrapperOptions;
  #timer: Timer | undefined;
  #expiryTimer: Timer | undefined;
  #asking = false;
  #askAgain = false;
  #stopped = false;
  #failures = 0;
  #refusals = 0;
  /** What was said about the last problem: each is said once, until it changes or clears. */
  #said: string | undefined;
  #owner: Owner | undefined;
  #bootstrapped = false;

  constructor(options: SidecarBootstrapperOptions) {
    this.#o = options;
  }

  /** A connection was registered (start, reconnect, rotation): ask on it now. */
  onRegistered(): void {
    this.#timer?.cancel();
    void this.#ask();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#expiryTimer?.cancel();
  }

  async #ask(): Promise<void> {
    if (this.#stopped) return;
    if (this.#asking) {
      this.#askAgain = true;
      return;
    }
    const link = this.#o.currentLink();
    if (!link || link.closed) return; // The next registration asks.
    this.#asking = true;
    try {
      const reply = readSidecarReply(await link.request('sidecar'));
      if (!reply.ok) {
        const problems = reply.problems
          .map((problem) => `${problem.path}: ${problem.message}`)
          .join('; ');
        throw new Error(
          `the registrar's sidecar answer is malformed (${problems}); nothing written`,
        );
      }
      await this.#apply(reply.value);
    } catch (error) {
      this.#onError(error);
    } finally {
      this.#asking = false;
      if (this.#askAgain && !this.#stopped) {
        this.#askAgain = false;
        void this.#ask();
      }
    }
  }

  async #apply(reply: SidecarReply): Promise<void> {
    const { clock, logger, config } = this.#o;
    this.#owner ??= await resolveOwner(config.owner);
    const paths = fullPaths(config);
    const files = await writeBootstrap(paths, reply.bootstrap, this.#owner);
    await writeToken(paths.token, reply.token.value, this.#owner);
    this.#failures = 0;
    this.#refusals = 0;
    if (files.notWritten.length === 0) this.#said = undefined;
    if (!this.#bootstrapped || files.written.length > 0) {
      logger.info(
        `sidecar bootstrapped for ${reply.entry} as service account ${reply.serviceAccount}`,
        {
          written: files.written.join(',') || 'none',
          unchanged: files.unchanged.join(',') || 'none',
        },
      );
    }
    for (const missing of files.notWritten) {
      // Said once per content: the agent never writes a root-owned file, so the install step
      // (or the operator) adds the line; asking again cannot help until then.
      this.#sayOnce(
        'warn',
        `${missing.path} is not the agent's to write and lacks the line istio-proxy needs to find istiod; add it as root at install: ${missing.lines.join('; ')}`,
      );
    }
    this.#bootstrapped = true;
    this.#emit({
      type: 'sidecar-written',
      written: files.written,
      unchanged: files.unchanged,
      notWritten: files.notWritten.map((missing) => missing.path),
    });
    if (files.written.length > 0 && config.onChange) await this.#runOnChange(config.onChange);

    const lifetimeMs = reply.token.expiresInSeconds * 1000;
    const refreshInMs = Math.max(1_000, Math.floor(lifetimeMs * (0.7 + 0.1 * clock.random())));
    logger.info('mesh identity refreshed', {
      audience: reply.token.audience,
      expiresAt: reply.token.expiresAt,
      nextRefreshMs: refreshInMs,
    });
    this.#emit({ type: 'token-written', expiresAt: reply.token.expiresAt, refreshInMs });
    this.#schedule(refreshInMs);
    this.#expiryTimer?.cancel();
    this.#expiryTimer = clock.setTimer(lifetimeMs, () =>
      logger.error(
        `the mesh identity expired at ${reply.token.expiresAt} and no fresh one came; istio-proxy cannot renew its certificate until the registrar answers 'sidecar'`,
      ),
    );
  }

  #onError(error: unknown): void {
    const { clock, logger, timing } = this.#o;
    // Lost with its connection: the next registration asks again.
    if (error instanceof RequestError && error.kind === 'closed') return;
    const code = error instanceof RequestError ? error.code : undefined;
    if (code === 'UnknownAction') {
      this.#sayOnce(
        'warn',
        "the registrar does not know 'sidecar' (an older version): the sidecar bootstrap is not available; registration goes on",
      );
      this.#emit({ type: 'sidecar-refused', code, retryInMs: undefined });
      return;
    }
    if (code === NotRegisteredError.CODE) {
      // The supervisor replaces the connection; the new registration asks again.
      logger.debug(
        'sidecar: this connection holds no entry (yet); waiting for the next registration',
      );
      return;
    }
    const reason = (error as Error).message;
    if (code !== undefined && REFUSALS.has(code)) {
      this.#refusals += 1;
      const retryInMs = refusalDelay(this.#refusals, timing, clock.random());
      const what =
        code === SIDECAR_ERROR_CODES.unavailable
          ? `the sidecar bootstrap is not available (${reason}); registration goes on`
          : `the registrar refused the sidecar bootstrap (${reason})`;
      this.#sayOnce(code === SIDECAR_ERROR_CODES.unavailable ? 'warn' : 'error', what);
      this.#emit({ type: 'sidecar-refused', code, retryInMs });
      this.#schedule(retryInMs);
      return;
    }
    this.#failures += 1;
    const retryInMs = Math.max(
      timing.backoffBaseMs,
      failureDelay(this.#failures, timing, clock.random()),
    );
    this.#sayOnce('warn', `sidecar bootstrap failed: ${reason}; asking again`);
    this.#emit({ type: 'sidecar-failed', reason, retryInMs });
    this.#schedule(retryInMs);
  }

  #sayOnce(level: 'warn' | 'error', line: string): void {
    if (this.#said === line) {
      this.#o.logger.debug(line);
      return;
    }
    this.#said = line;
    this.#o.logger[level](line);
  }

  #schedule(delayMs: number): void {
    this.#timer?.cancel();
    if (this.#stopped) return;
    this.#timer = this.#o.clock.setTimer(delayMs, () => void this.#ask());
  }

  async #runOnChange(command: string): Promise<void> {
    const exitCode = await (this.#o.runCommand ?? runShell)(command).catch(() => null);
    if (exitCode === 0) this.#o.logger.info('sidecar on-change command ran', { exitCode });
    else
      this.#o.logger.error(
        `sidecar on-change command failed (exit ${exitCode ?? 'none'}); it runs again at the next change`,
      );
    this.#emit({ type: 'sidecar-command', exitCode });
  }

  #emit(event: SidecarEvent): void {
    this.#o.onEvent?.({ ...event, at: this.#o.clock.now() });
  }
}

/** `/bin/sh -c <command>`, its output discarded, killed after 60 s; resolves the exit code. */
function runShell(command: string): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], { stdio: 'ignore', timeout: 60_000 });
    child.once('error', () => resolve(null));
    child.once('exit', (code) => resolve(code));
  });
}

/**
 * Said at start when the agent writes the system's own Istio files as root: the unit of an
 * older release had a drop-in that set `User=root`, which the agent no longer needs.
 */
export function rootWarning(config: SidecarConfig, euid: number): string | undefined {
  if (!config.enabled || euid !== 0 || config.prefix !== '/') return undefined;
  return "the agent runs as root with --sidecar: it needs no root (docs/agent.md, 'Put the VM in the mesh'); remove a drop-in that sets User=root and install registrar-agent-sidecar.tmpfiles.conf and registrar-agent-sidecar.conf instead";
}

/** `--debug` traces every message: a `sidecar` answer's token is replaced before it is logged. */
export function redactSidecarToken(text: string): string {
  if (!text.includes('"sidecar"')) return text;
  try {
    const message = JSON.parse(text) as { token?: { value?: unknown } };
    if (message.token?.value === undefined) return text;
    message.token.value = '<redacted>';
    return JSON.stringify(message);
  } catch {
    // Not JSON (a cut frame): nothing of it is logged rather than a part of a token.
    return '<a sidecar message that is not JSON>';
  }
}
