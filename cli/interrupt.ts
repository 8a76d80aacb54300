import { constants } from 'node:os';
import type { CliIo } from './commands/context.ts';

/**
 * Stopping a long-running command (`get --watch`) with Ctrl-C or SIGTERM, or by closing the
 * pipe it writes to (`| head`): the command ends its loop, closes its connections and exits
 * 128 + the signal's number (130 for Ctrl-C, 141 for a closed pipe), as a shell reports a
 * process that a signal stopped, without a stack trace.
 */
export class Interrupted extends Error {
  readonly signal: NodeJS.Signals;
  constructor(signal: NodeJS.Signals) {
    super(`interrupted by ${signal}`);
    this.signal = signal;
  }

  get exitCode(): number {
    return 128 + (constants.signals[this.signal] ?? constants.signals.SIGINT);
  }
}

export interface Interruption {
  signal: AbortSignal;
  /** The signal that stopped the command; SIGINT when a test aborted without naming one. */
  reason(): NodeJS.Signals;
  dispose(): void;
}

const STOPPING: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGPIPE'];

/**
 * The test's AbortSignal when it passes one (`CliIo.signal`), else SIGINT, SIGTERM, and
 * EPIPE on stdout (Node ignores SIGPIPE, and the write error would end in a stack trace).
 */
export function interruption(io: CliIo): Interruption {
  const reason = (signal: AbortSignal): NodeJS.Signals =>
    STOPPING.find((name) => name === signal.reason) ?? 'SIGINT';
  if (io.signal) {
    const signal = io.signal;
    return { signal, reason: () => reason(signal), dispose: () => {} };
  }
  const controller = new AbortController();
  const stop = (name: NodeJS.Signals) => controller.abort(name);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // Left in place: a write still queued when the watch stops may fail after it.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    stop('SIGPIPE');
  });
  return {
    signal: controller.signal,
    reason: () => reason(controller.signal),
    dispose: () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    },
  };
}
