import { resolve } from 'node:path';
import type { DashboardSources } from '../../lib/dashboard-server/dashboard-data.ts';
import { describeTarget, type Target } from '../target.ts';

/**
 * What `registrar dashboard` reads, opened for one target: the registry's lists, the sweeper's
 * records, the refusal counts. `followLocalRuntime` re-opens them when the local runtime
 * restarts.
 */
export interface OpenedSources {
  sources: DashboardSources;
  close(): void;
}

export async function openSources(
  target: Target,
  cwd: string,
  now: () => number,
): Promise<OpenedSources> {
  const [
    { createDocumentClient },
    { composeRegistry },
    { DynamoDbSweepRuns },
    { DynamoDbEntryPages },
    { composeRollouts },
    refusals,
  ] = await Promise.all([
    import('../../lib/store/dynamodb-client.ts'),
    import('../../lib/wiring/registry.ts'),
    import('../../lib/store/dynamodb-sweep-runs.ts'),
    import('../../lib/store/dynamodb-entry-pages.ts'),
    import('../../lib/wiring/rollouts.ts'),
    import('../../lib/dashboard-server/refusals.ts'),
  ]);
  const client = createDocumentClient({
    region: target.region,
    ...(target.endpoint ? { endpoint: target.endpoint } : {}),
  });
  const registry = composeRegistry(client, target.tableName);
  const pages = new DynamoDbEntryPages(client, target.tableName);
  const refusalSource = target.local
    ? // The local runtime keeps its counts beside the local.json the target came from.
      refusals.localRefusals(resolve(cwd, target.source, '..', 'refusals.json'))
    : target.endpoint
      ? refusals.noRefusals(
          `a table at ${target.endpoint} has no CloudWatch metrics to read refusals from`,
        )
      : refusals.cloudWatchRefusals(
          await refusals.awsMetricDataClient(target.region),
          target.region,
        );
  return {
    sources: {
      catalog: registry,
      disruption: registry,
      sweepRuns: new DynamoDbSweepRuns(client, target.tableName),
      firstEntries: (namespace: string, limit: number) => pages.firstEntries(namespace, limit),
      refusals: refusalSource,
      groups: composeRollouts(client, target.tableName),
      target: describeTarget(target),
      now,
    },
    close: () => client.destroy(),
  };
}

/** How often the local runtime's files are read again while its store answers. */
export const FOLLOW_CHECK_MS = 1_000;

/**
 * The local runtime's store, followed across restarts. `npm start` picks a new port for its
 * store each time and writes it to `.registrar/local.json`; a dashboard that read the file once
 * read a dead port forever after a restart (ECONNREFUSED under a page that still said "Live").
 * So the file is read again every FOLLOW_CHECK_MS, and at once after a failed read; when it
 * names another store, the sources are opened there, the old client is closed, and
 * `onTargetChange` listeners drop what was read from the old one. While the runtime is stopped
 * (no local.json), each read fails with `reread`'s explanation, which the page shows.
 */
export async function followLocalRuntime(
  first: Target,
  reread: () => Promise<Target>,
  open: (target: Target) => Promise<OpenedSources>,
  clock: () => number = () => performance.now(),
): Promise<OpenedSources> {
  let opened = await open(first);
  let key = keyOf(first);
  let shown = describeTarget(first);
  let checkedAt = clock();
  let suspect = false;
  let checking: Promise<OpenedSources> | undefined;
  const listeners: (() => void)[] = [];

  const fresh = (): Promise<OpenedSources> => {
    if (!suspect && clock() - checkedAt < FOLLOW_CHECK_MS) return Promise.resolve(opened);
    checking ??= (async () => {
      try {
        const target = await reread();
        checkedAt = clock();
        if (keyOf(target) !== key) {
          const old = opened;
          opened = await open(target);
          key = keyOf(target);
          shown = describeTarget(target);
          old.close();
          for (const listener of listeners) listener();
        }
        return opened;
      } finally {
        checking = undefined;
      }
    })();
    return checking;
  };

  /** Every read goes to the store local.json names now; a failure has it read again. */
  const read =
    <A extends unknown[], T>(pick: (sources: DashboardSources) => (...args: A) => Promise<T>) =>
    async (...args: A): Promise<T> => {
      const { sources } = await fresh().catch((error: unknown) => {
        suspect = true;
        throw error;
      });
      try {
        const result = await pick(sources)(...args);
        suspect = false;
        return result;
      } catch (error) {
        suspect = true;
        throw error;
      }
    };

  const sources: DashboardSources = {
    catalog: {
      listNamespaces: read((s) => s.catalog.listNamespaces.bind(s.catalog)),
      listEntries: read((s) => s.catalog.listEntries.bind(s.catalog)),
      getEntry: read((s) => s.catalog.getEntry.bind(s.catalog)),
    },
    disruption: {
      zoneCounts: read((s) => s.disruption.zoneCounts.bind(s.disruption)),
      disruptionRecord: read((s) => s.disruption.disruptionRecord.bind(s.disruption)),
    },
    sweepRuns: { recent: read((s) => s.sweepRuns.recent.bind(s.sweepRuns)) },
    refusals: { read: read((s) => s.refusals.read.bind(s.refusals)) },
    groups: {
      getGroup: read((s) => groupsOf(s).getGroup),
      getRollout: read((s) => groupsOf(s).getRollout),
      groupEntries: read((s) => groupsOf(s).groupEntries),
    },
    firstEntries: read(
      (s) => s.firstEntries ?? (async () => Promise.reject(new Error('no first entries'))),
    ),
    get target() {
      return shown;
    },
    now: opened.sources.now,
    onTargetChange: (listener) => listeners.push(listener),
  };
  return { sources, close: () => opened.close() };
}

function groupsOf(sources: DashboardSources): NonNullable<DashboardSources['groups']> {
  const { groups } = sources;
  if (!groups) throw new Error('this dashboard reads no groups');
  return {
    getGroup: groups.getGroup.bind(groups),
    getRollout: groups.getRollout.bind(groups),
    groupEntries: groups.groupEntries.bind(groups),
  };
}

function keyOf(target: Target): string {
  return `${target.endpoint ?? ''}|${target.region}|${target.tableName}`;
}
