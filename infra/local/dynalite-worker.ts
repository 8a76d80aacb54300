/**
 * The body of the store thread (dynalite-thread.ts): runs dynalite here, tells the host its
 * endpoint, and closes it (LevelDB included) when the host asks. Not an entry point of its own.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { type DynaliteOptions, startDynalite } from './dynalite-server.ts';

/** What the store thread tells its host. */
export type StoreThreadMessage =
  | { kind: 'listening'; endpoint: string }
  | { kind: 'closed' }
  | { kind: 'failed'; message: string };

const port = parentPort;
if (!port) throw new Error('dynalite-worker.ts runs as a worker thread (dynalite-thread.ts)');
const post = (message: StoreThreadMessage) => port.postMessage(message);

/** What the host hands the store thread: the store's options, and the runtime's channel. */
export interface StoreThreadData {
  options: DynaliteOptions;
  channel: MessagePort;
}

try {
  const { options, channel } = workerData as StoreThreadData;
  const store = await startDynalite(options);
  store.answerOver(channel);
  port.once('message', () => {
    // An open channel would keep this thread running after the store closed.
    store
      .close()
      .finally(() => channel.close())
      .then(
        () => post({ kind: 'closed' }),
        (error: unknown) => post({ kind: 'failed', message: `closing: ${String(error)}` }),
      );
  });
  post({ kind: 'listening', endpoint: store.endpoint });
} catch (error) {
  // Posted rather than thrown so the host can say which store failed, e.g. a data dir's
  // LevelDB already opened by another process.
  post({ kind: 'failed', message: error instanceof Error ? error.message : String(error) });
}
