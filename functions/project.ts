import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { DynamoDBStreamEvent, ScheduledEvent } from 'aws-lambda';
import { readConfig } from '../lib/config.ts';
import { dependenciesFromEnv, type FunctionHandler } from '../lib/dependencies.ts';
import type { Cidr } from '../lib/domain/cidr.ts';
import { logger, metrics } from '../lib/observability.ts';
import type { Cluster } from '../lib/projection/cluster.ts';
import { connectCluster } from '../lib/projection/cluster-access.ts';
import { describeDrift } from '../lib/projection/group-drift.ts';
import {
  type GroupSideDeps,
  type GroupSideReport,
  reconcileGroups,
  recordGroupMetrics,
} from '../lib/projection/group-side.ts';
import { describeGroupSync } from '../lib/projection/group-sync.ts';
import { recordProjectionMetrics } from '../lib/projection/projection-metrics.ts';
import { type ProjectorDeps, type ReconcileScope, reconcile } from '../lib/projection/projector.ts';
import { readProjectorConfig } from '../lib/projection/projector-config.ts';
import type { Target } from '../lib/projection/report.ts';
import { cachedSettingsListing } from '../lib/projection/settings-listing.ts';
import { scopeOfStream } from '../lib/projection/stream-scope.ts';
import { readRolloutConfig } from '../lib/rollout/rollout-config.ts';
import { createDocumentClient } from '../lib/store/dynamodb-client.ts';
import { composeRollouts } from '../lib/wiring/rollouts.ts';

export interface ProjectDependencies {
  store: ProjectorDeps['store'];
  /** The namespaces' address ranges, read once a run. */
  settings?: ProjectorDeps['settings'];
  /** The cluster's pod and Service ranges (REGISTRAR_CLUSTER_RANGES). */
  clusterRanges?: readonly Cidr[];
  /** Called per invocation: on EKS each connection carries a freshly signed token. */
  connect: () => Promise<Cluster>;
  targets: readonly Target[];
  /**
   * The groups' side of scheduled runs: groups from the cluster are synced, the default mode
   * checks the cluster's copies for drift. Absent: neither (tests of the entries' side).
   */
  groups?: GroupSideDeps;
}

export interface ProjectionSummary {
  scope: 'all' | string[];
  changes: number;
  conflicts: number;
  problems: number;
  errors: number;
  durationMs: number;
}

/**
 * A stream batch, the full reconcile's schedule, or the group sync's own schedule (groups from
 * the cluster: every minute, `{"groupSync": true}`), which syncs the groups and nothing else.
 */
export type ProjectEvent =
  | DynamoDBStreamEvent
  | ScheduledEvent
  | { groupSync: true }
  | Record<string, never>;

export class ProjectionFailedError extends Error {}

/**
 * The projector's Lambda: a DynamoDB stream batch reconciles the namespaces it touched (the
 * fast path, seconds after a change); the schedule reconciles everything (repairs whatever a
 * lost batch or a hand edit left). Both are the same level-triggered reconcile. A run with
 * errors fails the invocation: the stream retries and bisects the batch, then parks it in the
 * DLQ; the schedule's next run tries again.
 */
export function createProjectHandler(
  deps: ProjectDependencies,
): FunctionHandler<ProjectEvent, ProjectionSummary> {
  async function onEvent(event: ProjectEvent): Promise<ProjectionSummary> {
    if ('groupSync' in event) {
      const started = Date.now();
      if (!deps.groups) throw new Error('the projector has no group side configured');
      await groupSide(deps.groups, await deps.connect());
      return {
        scope: 'all',
        changes: 0,
        conflicts: 0,
        problems: 0,
        errors: 0,
        durationMs: Date.now() - started,
      };
    }
    const scope: ReconcileScope =
      'Records' in event ? scopeOfStream(event.Records) : { kind: 'all' };
    const covered = scope.kind === 'all' ? 'all' : scope.namespaces.map((n) => n.namespace);
    if (scope.kind === 'namespaces' && scope.namespaces.length === 0) {
      return { scope: [], changes: 0, conflicts: 0, problems: 0, errors: 0, durationMs: 0 };
    }
    const cluster = await deps.connect();
    // Groups first: a group the sync creates is projected by this very run.
    if (scope.kind === 'all' && deps.groups) await groupSide(deps.groups, cluster);
    const report = await reconcile(
      { store: deps.store, cluster, ...(deps.settings ? { settings: deps.settings } : {}) },
      { targets: deps.targets, clusterRanges: deps.clusterRanges ?? [] },
      scope,
    );
    recordProjectionMetrics(metrics, report);
    if (report.namespaces && !report.namespaces.indexComplete) {
      // A table from before the namespace index: safe (the cluster's namespaces are read too),
      // but a namespace with entries not yet in the cluster waits for its next change.
      logger.warn(
        'the namespace index is not backfilled: namespaces are also taken from the cluster; run `registrar get we -A` once with operator credentials',
        { fromCluster: report.namespaces.fromCluster },
      );
    }
    for (const change of report.changes) logger.info('projected', { ...change });
    for (const problem of report.problems) logger.warn('entry not projected', logFields(problem));
    for (const refused of report.refused) logger.warn('endpoint refused', logFields(refused));
    for (const unmanaged of report.unmanaged) {
      logger.warn('object exists without our managed-by label; left alone', { ...unmanaged });
    }
    const summary: ProjectionSummary = {
      scope: covered,
      changes: report.changes.length,
      conflicts: report.conflicts,
      problems: report.problems.length,
      errors: report.errors.length,
      durationMs: Math.round(report.durationMs),
    };
    logger.info('projection finished', { ...summary });
    if (report.errors.length > 0) {
      for (const error of report.errors) logger.error('projection error', logFields(error));
      throw new ProjectionFailedError(
        `projection failed: ${report.errors.map((e) => e.message).join('; ')}`,
      );
    }
    return summary;
  }

  return middy<ProjectEvent, ProjectionSummary>()
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .handler(onEvent);
}

/** Syncs the groups or checks them for drift, and says what it did; a failure fails the run. */
async function groupSide(deps: GroupSideDeps, cluster: Cluster): Promise<GroupSideReport> {
  const report = await reconcileGroups(deps, cluster);
  recordGroupMetrics(metrics, report);
  if (report.sync) {
    for (const change of describeGroupSync(report.sync)) logger.info('group synced', { change });
  }
  for (const line of describeDrift(report.drift ?? [])) logger.warn('group drift', { drift: line });
  return report;
}

/**
 * A problem or error as log keys. Powertools keeps `message` for the log line's own text and
 * drops a `message` key passed in the extra object, so the reason travels as `reason`.
 */
export function logFields<T extends { message: string }>(
  record: T,
): Omit<T, 'message'> & { reason: string } {
  const { message, ...rest } = record;
  return { ...rest, reason: message };
}

/** The Lambda wiring: the registry table, and the cluster from the stack options. */
export function projectDependenciesFromEnv(
  env: Record<string, string | undefined>,
): ProjectDependencies {
  const config = readConfig(env);
  const projector = readProjectorConfig(env);
  const deps = dependenciesFromEnv(env);
  const store = deps.store;
  const client = createDocumentClient({
    region: config.region,
    ...(config.dynamoDbEndpoint === undefined ? {} : { endpoint: config.dynamoDbEndpoint }),
  });
  return {
    store,
    ...(deps.namespaceSettings
      ? {
          settings: cachedSettingsListing(deps.namespaceSettings, config.namespaceSettingsCacheMs),
        }
      : {}),
    clusterRanges: projector.clusterRanges,
    connect: () => connectCluster(projector, config.region),
    targets: projector.targets,
    groups: {
      source: readRolloutConfig(env).groupSource,
      registry: store,
      rollouts: composeRollouts(client, config.tableName),
      now: () => Date.now(),
    },
  };
}

let built: FunctionHandler<ProjectEvent, ProjectionSummary> | undefined;

/** Dependencies are read on the first invocation, never at import (see lib/dependencies.ts). */
export const handler: FunctionHandler<ProjectEvent, ProjectionSummary> = async (event, context) => {
  built ??= createProjectHandler(projectDependenciesFromEnv(process.env));
  return built(event, context);
};
