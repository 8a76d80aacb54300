/**
 * dynalite in a process of its own, for benches that measure the sweeper's CPU with
 * `process.cpuUsage()`: in the bench's process (startDynalite), dynalite's HTTP server, its
 * expression parser and LevelDB took a large share of a run's CPU samples (a profile of
 * `node bench/silence-scale.ts 10000 1`), so a figure "per check" counted the store's work
 * too. On AWS, DynamoDB's CPU is not the Lambda's.
 *
 * Run as a child of the bench: `fork(this file)` with BENCH_DYNALITE_CHILD set; it prints
 * nothing and tells its parent its endpoint over IPC. It dies with its parent (the IPC channel
 * closing), so a bench that crashes leaves no store behind.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type RunningDynamo, startDynalite } from '../infra/local/dynalite-server.ts';

export interface DynaliteProcess extends RunningDynamo {
  /** The store process's CPU so far (user + system, ms): what the bench no longer counts. */
  cpuMs(): Promise<number>;
}

export async function startDynaliteProcess(): Promise<DynaliteProcess> {
  const child = fork(fileURLToPath(import.meta.url), [], {
    execArgv: [],
    env: { ...process.env, BENCH_DYNALITE_CHILD: '1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  try {
    const endpoint = await new Promise<string>((resolve, reject) => {
      child.once('message', (message: { endpoint?: string }) =>
        message.endpoint ? resolve(message.endpoint) : reject(new Error('dynalite: no endpoint')),
      );
      child.once('exit', (code) => reject(new Error(`dynalite's process exited (${code})`)));
    });
    const cpuMs = () =>
      new Promise<number>((resolve) => {
        child.once('message', (message: { cpuMs?: number }) =>
          resolve(message.cpuMs ?? Number.NaN),
        );
        child.send({ cpu: true });
      });
    return { endpoint, cpuMs, close: () => stop(child, killOnExit) };
  } catch (error) {
    await stop(child, killOnExit);
    throw error;
  }
}

function stop(child: ChildProcess, killOnExit: () => void): Promise<void> {
  process.off('exit', killOnExit);
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function serve(): Promise<void> {
  const store = await startDynalite();
  const closeAndExit = () => {
    void store.close().finally(() => process.exit(0));
  };
  process.on('SIGTERM', closeAndExit);
  process.on('disconnect', closeAndExit);
  process.on('message', () => {
    const used = process.cpuUsage();
    process.send?.({ cpuMs: (used.user + used.system) / 1000 });
  });
  process.send?.({ endpoint: store.endpoint });
}

if (process.env.BENCH_DYNALITE_CHILD === '1' && process.send) await serve();
