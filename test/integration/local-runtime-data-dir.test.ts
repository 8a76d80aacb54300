import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDynamoDbClient } from '../../lib/store/dynamodb-client.ts';
import {
  type RuntimeProcess,
  spawnRuntime,
  startRuntimeProcess,
} from '../fixtures/local-runtime-process.ts';

/**
 * Two `npm start` in one checkout, as real processes: the second on the same data dir used to
 * start and then crash on its first request (dynalite's `Database is closed`), and a `--memory`
 * one overwrote the data dir's local.json and deleted it on exit.
 */
let dataDir: string;
const running: RuntimeProcess[] = [];

beforeEach(() => {
  dataDir = join(mkdtempSync(join(tmpdir(), 'registrar-two-')), 'data');
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((runtime) => runtime.stop()));
  rmSync(dirname(dataDir), { recursive: true, force: true });
});

async function start(args: string[]): Promise<RuntimeProcess> {
  const runtime = await startRuntimeProcess(args);
  running.push(runtime);
  return runtime;
}

function localJson(dir = dataDir): { url: string; dynamoDbEndpoint: string } {
  return JSON.parse(readFileSync(join(dir, 'local.json'), 'utf8'));
}

async function tablesAt(endpoint: string): Promise<string[]> {
  const client = createDynamoDbClient({ region: 'us-east-1', endpoint });
  try {
    return (await client.send(new ListTablesCommand({}))).TableNames ?? [];
  } finally {
    client.destroy();
  }
}

describe('two runtimes and one data dir', () => {
  it('refuses a second runtime on the same data dir, naming the first one by PID and port', async () => {
    const first = await start(['--data-dir', dataDir]);
    const firstPort = new URL(first.url).port;

    const second = spawnRuntime(['--data-dir', dataDir]);
    expect(await second.exited).toBe(1);
    expect(second.stderr().trim()).toBe(
      `registrar: failed to start: the data dir ${dataDir} is in use by another registrar ` +
        `(PID ${first.child.pid}, port ${firstPort}, ${first.url}): stop that one, or start this ` +
        `one with --data-dir <another dir> or --memory (if no registrar runs, remove ` +
        `${join(dataDir, 'runtime.lock')})`,
    );
    expect(second.stdout()).toBe('');

    // The first one is untouched: its local.json, and its store still answers.
    expect(localJson().url).toBe(first.url);
    expect(await tablesAt(localJson().dynamoDbEndpoint)).toContain('workload-registrar');
    expect(await first.stop()).toBe(0);
    expect(first.stderr()).toBe('');
    expect(existsSync(join(dataDir, 'runtime.lock'))).toBe(false);
  });

  it('takes over the lock of a runtime that was killed, and says so', async () => {
    const killed = await start(['--data-dir', dataDir]);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(JSON.parse(readFileSync(join(dataDir, 'runtime.lock'), 'utf8')).pid).toBe(
      killed.child.pid,
    );

    const next = await start(['--data-dir', dataDir]);
    expect(next.stdout()).toContain(
      `note: took over ${join(dataDir, 'runtime.lock')} from PID ${killed.child.pid}, which is no longer running`,
    );
    expect(JSON.parse(readFileSync(join(dataDir, 'runtime.lock'), 'utf8')).pid).toBe(
      next.child.pid,
    );
    expect(await tablesAt(localJson().dynamoDbEndpoint)).toContain('workload-registrar');
    expect(await next.stop()).toBe(0);
  });

  it('gives a --memory runtime its own local.json and leaves the data dir alone', async () => {
    const kept = await start(['--data-dir', dataDir]);
    const before = readFileSync(join(dataDir, 'local.json'), 'utf8');

    // The data dir's runtime is not told about: --memory without --data-dir.
    const memory = await startRuntimeProcess(['--memory'], {}, dirname(dataDir));
    running.push(memory);
    const banner = memory
      .stdout()
      .match(/CLI target:\s+(\S+) \(for the CLI: export REGISTRAR_DATA_DIR=(\S+)\)/);
    expect(banner).not.toBeNull();
    const [, memoryJson = '', memoryDir = ''] = banner ?? [];
    expect(memoryJson).toBe(join(memoryDir, 'local.json'));
    expect(memoryDir.startsWith(tmpdir())).toBe(true);
    expect(localJson(memoryDir).url).toBe(memory.url);
    expect(readFileSync(join(dataDir, 'local.json'), 'utf8')).toBe(before);
    expect(existsSync(join(dirname(dataDir), '.registrar'))).toBe(false);

    expect(await memory.stop()).toBe(0);
    // Its own file is gone with its directory; the other runtime's file is still there.
    expect(existsSync(memoryDir)).toBe(false);
    expect(readFileSync(join(dataDir, 'local.json'), 'utf8')).toBe(before);
    expect(localJson().url).toBe(kept.url);
  });
});
