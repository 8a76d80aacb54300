import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { MessagePort } from 'node:worker_threads';
import { installExpressionCache } from './dynalite-expression-cache.ts';
import { closeIteratorsOnReturn } from './dynalite-iterator-close.ts';
import { answerOverPort } from './store-channel.ts';

/** The part of dynalite's (untyped, CommonJS) factory this runtime uses. */
type DynaliteFactory = (options: {
  path?: string;
  createTableMs?: number;
  deleteTableMs?: number;
  updateTableMs?: number;
}) => Server;

const require = createRequire(import.meta.url);
const dynalite = require('dynalite') as DynaliteFactory;

export interface DynaliteOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Keeps the data on disk (LevelDB via classic-level) under this directory; else in memory. */
  dataDir?: string;
}

export interface RunningDynamo {
  endpoint: string;
  close(): Promise<void>;
}

export interface RunningDynalite extends RunningDynamo {
  /** Also answers the requests that arrive on `port` (store-channel.ts): no HTTP. */
  answerOver(port: MessagePort): void;
}

/**
 * Runs dynalite in this process on 127.0.0.1: the DynamoDB-compatible store of `npm start` and
 * of the integration tests.
 *
 * What the registry relies on and dynalite 4 does support (checked by the store's integration
 * tests): PAY_PER_REQUEST tables, sparse GSIs with projection ALL, `size()` and `contains()` on
 * string sets in conditions, `if_not_exists`, `ADD`/`DELETE` on string sets, `ReturnValues`
 * UPDATED_OLD and ALL_OLD. What it lacks and the design therefore does not use: transactions,
 * TTL, streams, and `ReturnValuesOnConditionCheckFailure` (the store classifies a failed
 * condition with one GetItem instead).
 */
export async function startDynalite(options: DynaliteOptions = {}): Promise<RunningDynalite> {
  if (options.dataDir !== undefined) mkdirSync(options.dataDir, { recursive: true });
  installExpressionCache();
  // Without it every query leaks a LevelDB iterator: the local runtime grew without bound.
  closeIteratorsOnReturn();
  // Tables become ACTIVE after createTableMs; the default 500 ms would slow every test's setup.
  const server = dynalite({
    ...(options.dataDir === undefined ? {} : { path: options.dataDir }),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    answerOver: (channel) => answerOverPort(server, channel),
    close: () =>
      new Promise<void>((resolve, reject) => {
        // Keep-alive sockets of SDK clients would otherwise hold the server open.
        server.closeAllConnections?.();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
