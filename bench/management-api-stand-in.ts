/**
 * A stand-in for API Gateway's management API (`GET @connections/{id}`) in a process of its
 * own, answering over HTTP after a fixed latency: the sweeper's liveness checks go through the
 * real SDK client (ManagementApiLiveness) as on AWS, and the stand-in's own CPU is not counted
 * in the sweeper's. It serves with the local gateway's handler (infra/local/management-api.ts):
 * a connection the bench marks gone is 410 GoneException, any other is open. An open one's
 * `LastActiveAt` is now (a VM that pings), or the time the bench said it fell silent; `DELETE`
 * closes it (gone from then on) and is recorded with its time.
 *
 * Run as a child of the bench: `fork(this file)` with BENCH_STAND_IN_LATENCY_MS set. Messages:
 * `{ gone: string[] }`, `{ silent: string[], since: number }`, `{ count: true }`, `{ drain:
 * true }` (the ids asked about since the last drain), `{ closes: true }` (the DELETEs so
 * far, with their times) and `{ posts: true }` (the POSTs since the last such ask, with their
 * times: the notices an agent would get), each answered `{ ack, calls, ids?, closes?, posts? }`.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { handleManagementRequest, type ManagedConnections } from '../infra/local/management-api.ts';

export interface ManagementApiStandIn {
  /** `http://127.0.0.1:<port>`: where the SDK client sends `GET /@connections/{id}`. */
  url: string;
  /** From now on these connections are gone (410). */
  markGone(connectionIds: readonly string[]): Promise<void>;
  /** The requests answered so far. */
  calls(): Promise<number>;
  /** The connections asked about since the last call of this. */
  checkedSince(): Promise<string[]>;
  /** From now on these connections answer `LastActiveAt` = `since` (silent since then). */
  markSilent(connectionIds: readonly string[], since: number): Promise<void>;
  /** The connections closed with DELETE so far, and when (epoch ms). */
  closes(): Promise<{ id: string; at: number }[]>;
  /** The connections sent a message (POST) since the last call of this, and when (epoch ms). */
  postedSince(): Promise<{ id: string; at: number }[]>;
  close(): Promise<void>;
}

type Reply = {
  ack: number;
  calls: number;
  port?: number;
  ids?: string[];
  closes?: { id: string; at: number }[];
  posts?: { id: string; at: number }[];
};

export async function startManagementApiStandIn(latencyMs: number): Promise<ManagementApiStandIn> {
  const child = fork(fileURLToPath(import.meta.url), [], {
    execArgv: [],
    env: { ...process.env, BENCH_STAND_IN_LATENCY_MS: String(latencyMs) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let next = 0;
  const ask = (message: Record<string, unknown>) =>
    new Promise<Reply>((resolve, reject) => {
      const ack = ++next;
      const onMessage = (reply: Reply) => {
        if (reply.ack !== ack) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(reply);
      };
      const onExit = (code: number | null) => reject(new Error(`stand-in exited (${code})`));
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send({ ...message, ack });
    });
  const { port } = await ask({ hello: true });
  return {
    url: `http://127.0.0.1:${port}`,
    markGone: async (connectionIds) => {
      await ask({ gone: connectionIds });
    },
    calls: async () => (await ask({ count: true })).calls,
    checkedSince: async () => (await ask({ drain: true })).ids ?? [],
    markSilent: async (connectionIds, since) => {
      await ask({ silent: connectionIds, since });
    },
    closes: async () => (await ask({ closes: true })).closes ?? [],
    postedSince: async () => (await ask({ posts: true })).posts ?? [],
    close: () => stop(child, killOnExit),
  };
}

function stop(child: ChildProcess, killOnExit: () => void): Promise<void> {
  process.off('exit', killOnExit);
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** The child: one HTTP server, the set of gone connections, a call counter. */
function serve(latencyMs: number): void {
  const gone = new Set<string>();
  const silent = new Map<string, number>();
  const closes: { id: string; at: number }[] = [];
  let posts: { id: string; at: number }[] = [];
  let calls = 0;
  let asked: string[] = [];
  const connections: ManagedConnections = {
    describe: (id) =>
      gone.has(id)
        ? undefined
        : {
            connectedAt: 0,
            lastActiveAt: silent.get(id) ?? Date.now(),
            sourceIp: '10.0.0.1',
            userAgent: 'bench',
          },
    post: (id) => {
      if (gone.has(id)) return false;
      posts.push({ id, at: Date.now() });
      return true;
    },
    remove: (id) => {
      if (gone.has(id)) return false;
      gone.add(id);
      closes.push({ id, at: Date.now() });
      return true;
    },
  };
  const server = createServer((req, res) => {
    calls += 1;
    const id = /@connections\/([^/?]+)/.exec(req.url ?? '')?.[1];
    if (id) asked.push(decodeURIComponent(id));
    setTimeout(() => handleManagementRequest(connections, req, res), latencyMs);
  });
  const listening = new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
  process.on(
    'message',
    async (message: {
      ack: number;
      gone?: string[];
      silent?: string[];
      since?: number;
      drain?: boolean;
      closes?: boolean;
      posts?: boolean;
    }) => {
      for (const id of message.gone ?? []) gone.add(id);
      for (const id of message.silent ?? []) silent.set(id, message.since ?? Date.now());
      const port = await listening;
      const ids = message.drain ? asked : undefined;
      if (message.drain) asked = [];
      const posted = message.posts ? posts : undefined;
      if (message.posts) posts = [];
      process.send?.({
        ack: message.ack,
        calls,
        port,
        ...(ids ? { ids } : {}),
        ...(message.closes ? { closes } : {}),
        ...(posted ? { posts: posted } : {}),
      });
    },
  );
  process.on('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
  process.on('disconnect', () => process.exit(0));
}

if (process.env.BENCH_STAND_IN_LATENCY_MS !== undefined && process.send) {
  serve(Number(process.env.BENCH_STAND_IN_LATENCY_MS));
}
