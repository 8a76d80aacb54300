import { type Command, InvalidArgumentError, Option } from 'commander';
import type { Cluster } from '../../lib/projection/cluster.ts';
import type { ReconcileScope } from '../../lib/projection/projector.ts';
import type { CommandRegistration, Stores } from './context.ts';

interface ProjectOptions {
  kubeconfig?: string;
  context?: string;
  targets: string;
  namespace?: string;
  dryRun?: boolean;
  clusterRanges?: string;
}

/**
 * `registrar project --kubeconfig PATH`: one reconcile of the registry into a cluster, the
 * same the projector function runs, printing each change. With --dry-run it reads the
 * cluster and prints what it would change, writing nothing.
 */
export const registerProject: CommandRegistration = (program, context) => {
  program
    .command('project')
    .description('reconcile the registry into a Kubernetes cluster once and print what changed')
    .option(
      '--kubeconfig <path>',
      'kubeconfig of the cluster to write (default: as kubectl finds it: KUBECONFIG, then ~/.kube/config)',
    )
    .option('--context <name>', 'kubeconfig context (default: its current context)')
    .addOption(
      new Option('--targets <list>', 'comma-separated: istio, linkerd, endpointslices')
        .argParser(checkTargets)
        .default('istio'),
    )
    .option('-n, --namespace <namespace>', 'reconcile one namespace only (default: all)')
    .option('--dry-run', 'print what would change, write nothing')
    .option(
      '--cluster-ranges <cidrs>',
      "the cluster's pod and Service CIDRs, comma-separated: no endpoint in them is written (env REGISTRAR_CLUSTER_RANGES)",
    )
    .action(async (options: ProjectOptions, command: Command) => {
      // Loaded here: @kubernetes/client-node is large and only this command needs it.
      const [
        { resolveKubeConfig },
        { createKubernetesCluster },
        { reconcile },
        { describeReport },
        { parseTargets, parseClusterRanges },
      ] = await Promise.all([
        import('../../lib/projection/kubeconfig.ts'),
        import('../../lib/projection/kubernetes-cluster.ts'),
        import('../../lib/projection/projector.ts'),
        import('../../lib/projection/report.ts'),
        import('../../lib/projection/projector-config.ts'),
      ]);
      const { config } = resolveKubeConfig({
        env: context.io.env,
        ...(context.io.env.HOME ? { home: context.io.env.HOME } : {}),
        ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : {}),
        ...(options.context ? { context: options.context } : {}),
      });
      const given = options.clusterRanges ?? context.io.env.REGISTRAR_CLUSTER_RANGES;
      const clusterRanges = parseClusterRanges(
        given ?? '',
        options.clusterRanges !== undefined ? '--cluster-ranges' : 'REGISTRAR_CLUSTER_RANGES',
      );
      const cluster = createKubernetesCluster(config);
      const stores = await context.stores(command);
      const { catalog, namespaceSettings } = stores;
      // The groups first: from the cluster they are synced (as the projector's schedule does),
      // from the registry the cluster's copies are checked for drift.
      const groupLines = await projectGroups(
        stores,
        cluster,
        options.dryRun ?? false,
        context.now(),
      );
      const scope: ReconcileScope = options.namespace
        ? { kind: 'namespaces', namespaces: [{ namespace: options.namespace }] }
        : { kind: 'all' };
      const report = await reconcile(
        { store: catalog, cluster, settings: namespaceSettings },
        {
          targets: parseTargets(options.targets),
          dryRun: options.dryRun ?? false,
          clusterRanges,
        },
        scope,
      );
      context.out(groupLines.map((line) => `${line}\n`).join(''));
      context.out(describeReport(report));
      if (report.errors.length > 0) {
        throw new Error(`${report.errors.length} error(s) while projecting; see above`);
      }
    });
};

async function projectGroups(
  stores: Stores,
  cluster: Cluster,
  dryRun: boolean,
  now: number,
): Promise<string[]> {
  const [{ syncGroups, describeGroupSync }, { checkGroupDrift, describeDrift }] = await Promise.all(
    [import('../../lib/projection/group-sync.ts'), import('../../lib/projection/group-drift.ts')],
  );
  const source = (await stores.groupSource.read())?.source;
  if (source?.kind === 'cluster') {
    const report = await syncGroups(
      { cluster, registry: stores.catalog, rollouts: stores.rollouts },
      { ...(source.selector ? { selector: source.selector } : {}), dryRun, now },
    );
    return describeGroupSync(report);
  }
  return describeDrift(await checkGroupDrift(stores.catalog, cluster));
}

function checkTargets(text: string): string {
  const names = text.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !['istio', 'linkerd', 'endpointslices'].includes(name));
  if (names.length === 0 || unknown.length > 0) {
    throw new InvalidArgumentError(
      'must list istio, linkerd or endpointslices, separated by commas',
    );
  }
  return text;
}
