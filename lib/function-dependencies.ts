import type { Context } from 'aws-lambda';
import type { InstanceAttestation } from './auth/instance-attestation.ts';
import type { PolicyReader } from './auth/policy-store.ts';
import type { TerminatedInstances } from './auth/terminated-instance-store.ts';
import type { TokenStore } from './auth/token-store.ts';
import type { Config } from './config.ts';
import type { EpochMillis } from './domain/model.ts';
import type { NoticeAnswer } from './gateway/connection-notifier.ts';
import type { ConnectionCloser } from './protocol/message-budget-guard.ts';
import type { RegistrarStore } from './registrar-store.ts';
import type { ConnectionLiveness } from './registration/liveness.ts';
import type { NamespaceLimits } from './registration/namespace-limits.ts';
import type { NamespaceSettingsStore } from './registration/namespace-settings-store.ts';
import type { Migration, SchemaStore } from './registration/schema-store.ts';
import type { SweepPolicyStore } from './sweep/sweep-policy-store.ts';
import type { SweepRunStore } from './sweep/sweep-run-store.ts';

// The shape of what a function is given. Its own module, below lib/dependencies.ts and
// lib/wiring/, so the wiring can name it while lib/dependencies.ts composes the wiring.

/**
 * What a function needs from the outside world, passed in explicitly so that tests and the
 * local runtime build handlers over dynalite and a fixed clock, and Lambda over DynamoDB.
 */
export interface Dependencies {
  config: Config;
  store: RegistrarStore;
  tokens: TokenStore;
  /** IAM mode's allow rules (role -> namespace), read on connect; absent, none is allowed. */
  policies: PolicyReader | undefined;
  /**
   * IAM mode's instance attestation (mode and trusted certificates); absent, a connect with a
   * document is refused (nothing to verify it against) and one without is accepted.
   */
  attestation: InstanceAttestation | undefined;
  /**
   * IAM mode: instances EC2 reported terminated, whose credentials and documents connect
   * refuses (lib/auth/terminated-instances.ts); absent, none is remembered.
   */
  terminatedInstances: TerminatedInstances | undefined;
  /** API Gateway's word on whether a connection still exists; absent, no liveness checks. */
  liveness: ConnectionLiveness | undefined;
  /** Where the effective sweep policy is recorded for every client to read. */
  sweepPolicy: SweepPolicyStore;
  /** Where the sweeper keeps a summary of its recent runs (registrar dashboard's chart). */
  sweepRuns: SweepRunStore;
  /** Each namespace's quotas, networks and address ranges, as $connect enforces them. */
  limits: NamespaceLimits | undefined;
  /** The namespaces' settings as stored (the projector reads their address ranges). */
  namespaceSettings: NamespaceSettingsStore | undefined;
  /**
   * The table's schema record and this code's migrations: the sweeper refuses a table this
   * code cannot read and runs pending migrations in its spare time.
   */
  schema: SchemaStore;
  migrations: readonly Migration[];
  /**
   * Closes a connection from the server side: the message function closes one over its
   * message budget (lib/domain/message-budget.ts). Absent, such a connection is only refused.
   */
  closeConnection: ConnectionCloser | undefined;
  /**
   * Sends a message to a connection (`POST @connections/{id}`): the sweeper tells a live agent
   * its group's changed heartbeat. Absent, no agent is told (they learn it when they reconnect).
   */
  notifyConnection: ((connectionId: string, message: unknown) => Promise<NoticeAnswer>) | undefined;
  now: () => EpochMillis;
}

/** A function's handler as Lambda, the local runtime and tests call it. */
export type FunctionHandler<TEvent, TResult> = (
  event: TEvent,
  context: Context,
) => Promise<TResult>;
