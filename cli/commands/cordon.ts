import { type Command, InvalidArgumentError, Option } from 'commander';
import { ENV } from '../../lib/config.ts';
import { MAX_CORDON_MESSAGE } from '../../lib/domain/entry-record.ts';
import type { ObjectRef } from '../../lib/domain/model.ts';
import {
  type AgentNotifier,
  changeMaintenance,
  type MaintenanceResult,
} from '../../lib/registration/cordon-entries.ts';
import { count, managementEndpoint, managementEndpointOption } from '../close-holders.ts';
import {
  type LabelSelector,
  matchesSelector,
  parseLabelSelector,
  SELECTOR_HELP,
} from '../label-selector.ts';
import { parseResourceArgs } from '../resource-args.ts';
import {
  type CliContext,
  type CommandRegistration,
  ReportedFailure,
  type Stores,
  UsageError,
} from './context.ts';
import { namespaceOf, namespaceOption, notFound, QUALIFIED } from './resources.ts';

interface CordonOptions {
  namespace?: string;
  allNamespaces?: boolean;
  selector?: LabelSelector;
  message?: string;
  rate: number;
  dryRun?: boolean;
  managementEndpoint?: string;
}

export const DEFAULT_CORDON_MESSAGE = 'cordoned with registrar cordon';
/** Entries changed per second by default: a fleet of 20,000 in under 17 minutes. */
export const DEFAULT_RATE = 20;
/** Entries in flight at once (a write and a post per holder each). */
const CONCURRENCY = 8;

export const registerCordon: CommandRegistration = (program, context) =>
  registerVerb(program, context, 'cordon');
export const registerUncordon: CommandRegistration = (program, context) =>
  registerVerb(program, context, 'uncordon');

function registerVerb(
  program: Parameters<CommandRegistration>[0],
  context: CliContext,
  verb: 'cordon' | 'uncordon',
): void {
  const command = program
    .command(verb)
    .description(
      verb === 'cordon'
        ? 'take workloadentries (we) out of traffic (Healthy False, Maintenance) without disconnecting them, until uncordon'
        : 'put cordoned workloadentries (we) back into traffic',
    )
    .argument(
      '<resource>',
      'we NAME..., we -l SELECTOR, wg NAME (every entry of the group), or TYPE/NAME',
    )
    .argument('[names...]', 'the entries (we) or groups (wg)')
    .addOption(namespaceOption())
    .option('-A, --all-namespaces', 'with -l: select in every namespace')
    .addOption(new Option('-l, --selector <selector>', SELECTOR_HELP).argParser(parseLabelSelector))
    .addOption(
      new Option('--rate <per-second>', 'entries changed per second (the mesh follows each change)')
        .argParser(parseRate)
        .default(DEFAULT_RATE),
    )
    .option('--dry-run', 'say which entries would change; change nothing')
    .addOption(managementEndpointOption());
  if (verb === 'cordon') {
    command.option(
      '--message <text>',
      `why, for the Healthy condition, the events and the agent's log (default "${DEFAULT_CORDON_MESSAGE}")`,
    );
  }
  command
    .addHelpText(
      'after',
      `
Examples:
registrar ${verb} we web-10.0.0.12 -n shop${verb === 'cordon' ? " --message 'INC-123: bad disk'" : ''}
registrar ${verb} we -l topology.kubernetes.io/zone=eu-west-1a -n shop
registrar ${verb} wg web -n shop --rate 50

${
  verb === 'cordon'
    ? `A cordoned entry stays registered and connected, and stays out of traffic across its agent's
reconnects, rotations and health reports, until 'registrar uncordon'. The agents are told
through API Gateway's management endpoint (${ENV.connectionsUrl}, --management-endpoint, or
the local runtime's) and log it; an agent that was not reachable learns it when it
reconnects. An entry that is deleted (swept after its grace period, its instance terminated,
registrar delete) takes its cordon with it.`
    : 'The entries follow their agents\u2019 probes again at once.'
}`,
    )
    .action(async (resource: string, names: string[], options: CordonOptions, cmd: Command) =>
      runMaintenance(context, verb === 'cordon', resource, names, options, cmd),
    );
}

function parseRate(text: string): number {
  const rate = Number(text);
  if (!Number.isFinite(rate) || rate <= 0) {
    throw new InvalidArgumentError(
      'must be a positive number of entries per second, such as 20 or 0.5',
    );
  }
  return rate;
}

async function runMaintenance(
  context: CliContext,
  cordon: boolean,
  resource: string,
  names: string[],
  options: CordonOptions,
  command: Command,
): Promise<void> {
  const message = cordonMessage(options.message);
  const stores = await context.stores(command);
  const refs = await targetsOf(stores, resource, names, options, cordon);
  if (refs.missing.length > 0) {
    for (const line of refs.missing) context.io.stderr.write(`error: ${line}\n`);
    throw new ReportedFailure();
  }
  if (refs.found.length === 0) {
    const where = options.allNamespaces ? '' : ` in ${namespaceOf(options)} namespace`;
    context.io.stderr.write(`No resources found${where}.\n`);
    return;
  }
  const verb = cordon ? 'cordoned' : 'uncordoned';
  if (options.dryRun) {
    for (const ref of refs.found) context.out(`${shown(ref, options)} ${verb} (dry run)\n`);
    return;
  }
  const target = context.target();
  if (target === undefined) throw new Error('the registry target is not resolved');
  const endpoint = managementEndpoint(options.managementEndpoint, context.io.env, target);
  const notifier = endpoint ? await openNotifier(endpoint, target.region) : undefined;
  try {
    const results = await changeMaintenance(
      stores.maintenance,
      notifier,
      refs.found,
      {
        cordon,
        message,
        ratePerSecond: options.rate,
        concurrency: CONCURRENCY,
        now: () => context.now(),
      },
      (result) => report(context, result, options),
    );
    summarize(context, results, cordon, refs.found.length);
  } finally {
    notifier?.destroy();
  }
}

function cordonMessage(given: string | undefined): string {
  if (given === undefined) return DEFAULT_CORDON_MESSAGE;
  const message = given.trim();
  if (message === '')
    throw new UsageError("--message is empty; say why, such as --message 'INC-123: bad disk'");
  if (message.length > MAX_CORDON_MESSAGE) {
    throw new UsageError(
      `--message is ${message.length} characters; at most ${MAX_CORDON_MESSAGE} (it becomes the Healthy condition's message)`,
    );
  }
  return message;
}

/**
 * The entries the command line names: `we NAME...` as given (each must exist), `we -l SEL`
 * (one namespace or -A), `wg NAME...` every entry each group auto-registered (with -l, those
 * that match). Checked before anything changes.
 */
async function targetsOf(
  stores: Stores,
  resource: string,
  names: string[],
  options: CordonOptions,
  cordon: boolean,
): Promise<{ found: ObjectRef[]; missing: string[] }> {
  const verb = cordon ? 'cordon' : 'uncordon';
  const requests = parseResourceArgs(verb, [resource, ...names]);
  const selector = options.selector;
  const namespace = options.allNamespaces ? undefined : namespaceOf(options);
  const found: ObjectRef[] = [];
  const missing: string[] = [];
  for (const { kind, names: named } of requests) {
    if (kind === 'WorkloadEntry' && named.length > 0) {
      if (selector)
        throw new UsageError('a name cannot be given with a selector (-l): use one or the other');
      if (namespace === undefined)
        throw new UsageError(
          'a name cannot be looked up across all namespaces; use -n <namespace>',
        );
      for (const name of named) {
        const ref = { namespace, name };
        if (await stores.catalog.getEntry(ref)) found.push(ref);
        else missing.push(notFound(kind, ref).message);
      }
      continue;
    }
    if (kind === 'WorkloadEntry' && !selector) {
      throw new UsageError(
        `name the entries to ${verb} (registrar ${verb} we NAME), or select them with -l`,
      );
    }
    if (kind === 'WorkloadGroup' && named.length === 0) {
      throw new UsageError(`name the group whose entries to ${verb}: registrar ${verb} wg NAME`);
    }
    if (kind === 'WorkloadGroup' && namespace === undefined) {
      throw new UsageError('a group is looked up in one namespace; use -n <namespace>');
    }
    const entries = await stores.catalog.listEntries(namespace);
    for (const record of entries) {
      const group = record.autoRegistrationGroup;
      if (kind === 'WorkloadGroup' && (group === undefined || !named.includes(group))) continue;
      if (selector && !matchesSelector(selector, record.entry.metadata.labels)) continue;
      found.push({ namespace: record.entry.metadata.namespace, name: record.entry.metadata.name });
    }
  }
  return { found, missing };
}

function shown(ref: ObjectRef, options: CordonOptions): string {
  const name = `${QUALIFIED.WorkloadEntry}/${ref.name}`;
  return options.allNamespaces ? `${ref.namespace}/${name}` : name;
}

const SAID: Record<MaintenanceResult['outcome'], string> = {
  cordoned: 'cordoned',
  'already-cordoned': 'already cordoned',
  uncordoned: 'uncordoned',
  'not-cordoned': 'already uncordoned',
  'not-found': 'not found',
  failed: 'failed',
};

/** One line per entry as it is done (kubectl's `node/NAME cordoned`); failures on stderr. */
function report(context: CliContext, result: MaintenanceResult, options: CordonOptions): void {
  const name = shown(result.ref, options);
  if (result.outcome === 'not-found') {
    context.io.stderr.write(`error: ${notFound('WorkloadEntry', result.ref).message}\n`);
    return;
  }
  if (result.outcome === 'failed') {
    context.io.stderr.write(`error: ${name}: ${result.error}\n`);
    return;
  }
  context.out(`${name} ${SAID[result.outcome]}\n`);
  for (const { connectionId, reason } of result.untold) {
    if (reason === 'no management endpoint') continue;
    context.io.stderr.write(
      `warning: could not tell the agent of ${name} (connection ${connectionId}): ${reason}; it learns it when it reconnects\n`,
    );
  }
}

/** The totals of a bulk change, and the agents no endpoint could reach. */
function summarize(
  context: CliContext,
  results: readonly MaintenanceResult[],
  cordon: boolean,
  total: number,
): void {
  const by = (outcome: MaintenanceResult['outcome']) =>
    results.filter((result) => result.outcome === outcome).length;
  const changed = by(cordon ? 'cordoned' : 'uncordoned');
  const already = by(cordon ? 'already-cordoned' : 'not-cordoned');
  const failed = by('failed') + by('not-found');
  const told = results.reduce((sum, result) => sum + result.told, 0);
  const noEndpoint = results.reduce(
    (sum, result) =>
      sum + result.untold.filter((u) => u.reason === 'no management endpoint').length,
    0,
  );
  if (noEndpoint > 0) {
    context.io.stderr.write(
      `warning: ${count(noEndpoint, 'agent')} not told (no management endpoint): they learn it when they reconnect; pass --management-endpoint <url> (the stack output ManagementEndpoint) or set ${ENV.connectionsUrl}\n`,
    );
  }
  if (total > 1) {
    const verb = cordon ? 'cordoned' : 'uncordoned';
    context.out(
      `${verb} ${changed} of ${total} entries (${already} already ${verb}, ${failed} failed); ${count(told, 'agent')} told\n`,
    );
  }
  if (failed > 0) throw new ReportedFailure();
}

async function openNotifier(
  endpoint: string,
  region: string,
): Promise<AgentNotifier & { destroy(): void }> {
  // Loaded here: the SDK takes a while to import, and a dry run or a usage error needs none.
  const { ManagementApiPost } = await import('../../lib/gateway/management-api-post.ts');
  return new ManagementApiPost({ endpoint, region });
}
