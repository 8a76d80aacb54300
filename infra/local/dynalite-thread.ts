import { MessageChannel, Worker } from 'node:worker_threads';
import type { DynaliteOptions, RunningDynamo } from './dynalite-server.ts';
import type { StoreThreadData, StoreThreadMessage } from './dynalite-worker.ts';
import { channelAuthSchemes, StoreChannelHandler } from './store-channel.ts';

export interface RunningStoreThread extends RunningDynamo {
  /**
   * Settles (never rejects) when the store thread stops without being asked to: an uncaught
   * error in dynalite or LevelDB, or the thread running out of memory. Every later DynamoDB
   * request of the runtime would fail, so the runtime stops rather than keep accepting agents.
   */
  failed: Promise<Error>;
  /** The store's thread: for its resource usage, and for tests that make it fail. */
  thread: Worker;
  /**
   * How this runtime's own clients reach the store: over a message port to its thread, not
   * HTTP, and unsigned (store-channel.ts). `endpoint` still serves everyone else.
   */
  transport: { requestHandler: StoreChannelHandler; httpAuthSchemes: typeof channelAuthSchemes };
}

/** How long a store thread may take to close its LevelDB before it is terminated. */
const CLOSE_TIMEOUT_MS = 10_000;

/**
 * Runs dynalite on its own thread: `npm start`'s store. In the runtime's thread, dynalite (its
 * HTTP server, expression parser and LevelDB) took about a third of the CPU of a burst of
 * connects and left the second core idle (docs/benchmarks.md, "Local end to end"). A worker
 * thread rather than a child process: it dies with the runtime, so a SIGKILLed runtime leaves
 * no orphan holding the data dir's LevelDB lock, and the next runtime on that dir can open it.
 */
export async function startDynaliteThread(
  options: DynaliteOptions = {},
): Promise<RunningStoreThread> {
  const channel = new MessageChannel();
  const workerData: StoreThreadData = { options, channel: channel.port2 };
  const worker = new Worker(new URL('./dynalite-worker.ts', import.meta.url), {
    workerData,
    transferList: [channel.port2],
    name: 'dynalite',
  });
  let closing = false;
  let reportFailure: (error: Error) => void = () => {};
  const failed = new Promise<Error>((resolve) => {
    reportFailure = resolve;
  });
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));

  const endpoint = await new Promise<string>((resolve, reject) => {
    const fail = (error: Error) => reject(new Error(`dynalite did not start: ${error.message}`));
    worker.once('error', fail);
    worker.once('exit', (code) => fail(new Error(`its thread exited with code ${code}`)));
    worker.once('message', (message: StoreThreadMessage) => {
      worker.off('error', fail);
      if (message.kind === 'listening') resolve(message.endpoint);
      else fail(new Error(message.kind === 'failed' ? message.message : 'unexpected message'));
    });
  });

  const requestHandler = new StoreChannelHandler(
    channel.port1,
    `the local DynamoDB store (dynalite, ${endpoint}) is not running`,
  );
  let lastError: Error | undefined;
  worker.on('error', (error) => {
    lastError = error;
  });
  worker.once('exit', (code) => {
    requestHandler.close();
    if (closing) return;
    reportFailure(
      new Error(
        `the local DynamoDB store (dynalite, ${endpoint}) stopped unexpectedly ` +
          `(${lastError ? lastError.message : `thread exit code ${code}`}); ` +
          'the registrar cannot serve agents without it and stops',
      ),
    );
  });

  return {
    endpoint,
    failed,
    thread: worker,
    transport: { requestHandler, httpAuthSchemes: channelAuthSchemes },
    close: async () => {
      closing = true;
      const closed = new Promise<void>((resolve, reject) => {
        worker.on('message', (message: StoreThreadMessage) => {
          if (message.kind === 'closed') resolve();
          if (message.kind === 'failed') reject(new Error(`dynalite: ${message.message}`));
        });
        // A thread that already died has nothing left to close.
        void exited.then(() => resolve());
      });
      worker.postMessage('close');
      const timer = setTimeout(() => void worker.terminate(), CLOSE_TIMEOUT_MS);
      try {
        await closed;
      } finally {
        await exited;
        clearTimeout(timer);
      }
    },
  };
}
