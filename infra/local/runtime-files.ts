import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DataDirLock, lockDataDir } from './data-dir-lock.ts';
import { LOCAL_DEFAULTS } from './defaults.ts';

export interface RuntimeFiles {
  /** dynalite keeps the registry under `<dataDir>/dynalite`. */
  keepsRegistry: boolean;
  /** Where `local.json` goes: the data dir, or a `--memory` runtime's own directory. */
  localJsonDir: string;
  /** Things worth telling the user at start (a stale lock taken over). */
  notices: string[];
  /** Records the gateway's URL in the lock, once it listens. */
  listening(url: string): Promise<void>;
  /** Frees the data dir (after the store has closed) or removes the runtime's own directory. */
  release(): Promise<void>;
}

/**
 * Decides which files a runtime may touch, and claims them. A runtime that keeps its registry
 * in the data dir, or writes the CLI's `local.json` there, locks the dir: two runtimes on one
 * dir would share dynalite's LevelDB (which one process may open) and overwrite each other's
 * `local.json`. A `--memory` runtime with no data dir given touches no data dir at all: its
 * `local.json` goes to a fresh temporary directory, removed when it stops.
 */
export async function claimRuntimeFiles(
  options: {
    memory?: boolean;
    dynamoDbEndpoint?: string;
    writeLocalJson?: boolean;
    dataDir?: string;
    port?: number;
  },
  dataDir: string,
): Promise<RuntimeFiles> {
  const keepsRegistry = !options.memory && !options.dynamoDbEndpoint;
  if (options.writeLocalJson && options.memory && options.dataDir === undefined) {
    const ownDir = await mkdtemp(join(tmpdir(), 'registrar-memory-'));
    return {
      keepsRegistry,
      localJsonDir: ownDir,
      notices: [],
      listening: async () => {},
      release: () => rm(ownDir, { recursive: true, force: true }),
    };
  }
  let lock: DataDirLock | undefined;
  if (keepsRegistry || options.writeLocalJson) {
    lock = await lockDataDir(dataDir, options.port ?? LOCAL_DEFAULTS.port);
  }
  const stale = lock?.tookOverFrom;
  return {
    keepsRegistry,
    localJsonDir: dataDir,
    notices: stale
      ? [`took over ${lock?.path} from PID ${stale.pid}, which is no longer running`]
      : [],
    listening: async (url) => lock?.update({ port: Number(new URL(url).port), url }),
    release: async () => lock?.release(),
  };
}
