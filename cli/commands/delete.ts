import { type Command, Option } from 'commander';
import { ENV } from '../../lib/config.ts';
import type { ObjectRef } from '../../lib/domain/model.ts';
import { readDocuments } from '../../lib/protocol/istio-document-reader.ts';
import { DEFAULT_NAMESPACE, showValue } from '../../lib/protocol/istio-documents.ts';
import { removeGroupEntries } from '../../lib/registration/remove-group-entries.ts';
import {
  closeHolders,
  count,
  type Holder,
  managementEndpoint,
  managementEndpointOption,
} from '../close-holders.ts';
import { type DryRunMode, dryRunOption } from '../dry-run-option.ts';
import { groupChangeRefusals } from '../group-rules.ts';
import { type InputFile, readInputs } from '../input-files.ts';
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
import {
  namespaceOf,
  namespaceOption,
  notFound,
  QUALIFIED,
  RESOURCE_HELP,
  type ResourceKind,
  renderEntry,
  renderGroup,
} from './resources.ts';

interface DeleteOptions {
  namespace?: string;
  selector?: LabelSelector;
  all?: boolean;
  dryRun: DryRunMode;
  cascade: 'background' | 'orphan';
  filename?: string[];
  ignoreNotFound?: boolean;
  managementEndpoint?: string;
}

/** Where the connections of deleted entries are closed, and how to warn. */
interface Closing {
  endpoint: string | undefined;
  region: string;
  warn: (line: string) => void;
}

/** One object to delete, from the command line or a document of `-f`. */
interface Target {
  kind: ResourceKind;
  ref: ObjectRef;
}

export const registerDelete: CommandRegistration = (program, context) => {
  program
    .command('delete')
    .description(`delete ${RESOURCE_HELP} by name, or those a file describes`)
    .argument('[resource]', `TYPE or TYPE/NAME; types: ${RESOURCE_HELP}`)
    .argument('[names...]', 'the objects (or more TYPE/NAME)')
    .addOption(namespaceOption())
    .option(
      '-f, --filename <file>',
      "delete the objects a file names (as for apply: a file, a directory, or '-' for stdin); repeatable",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--ignore-not-found', 'an object that is not there is not an error')
    .addOption(new Option('-l, --selector <selector>', SELECTOR_HELP).argParser(parseLabelSelector))
    .option('--all', 'every object of the type in the namespace')
    .addOption(
      dryRunOption({
        client: 'prints what would be deleted without reading the registry',
        server: 'also reads it: what exists, and the entries a group would take along',
      }),
    )
    .addOption(
      new Option(
        '--cascade <mode>',
        "for a group: 'background' also deletes the entries it auto-registered, as Kubernetes garbage-collects them through their ownerReference; 'orphan' keeps them",
      )
        .choices(['background', 'orphan'])
        .default('background'),
    )
    .addOption(managementEndpointOption())
    .addHelpText(
      'after',
      `
Examples:
  registrar delete we web-10.0.0.12 -n shop
  registrar delete we/web-10.0.0.12 wg/web -n shop
  registrar delete -f web.yaml --ignore-not-found
  registrar delete we -l app=web,version=v1 -n shop --dry-run=server
  registrar delete we --all -n staging

Deleting an auto-registered entry of a connected VM closes the connections that held it, so
its agent reconnects and registers again at once from the group's current template; deleting
a group (cascade background) closes those of its entries, and their agents retry until the
group is applied again. The connections are closed through API Gateway's management endpoint:
--management-endpoint, ${ENV.connectionsUrl}, or the local runtime's (npm start).`,
    )
    .action(
      async (
        resource: string | undefined,
        names: string[],
        options: DeleteOptions,
        command: Command,
      ) => {
        const targets = await targetsOf(
          context,
          () => context.stores(command),
          resource,
          names,
          options,
        );
        const stores = await context.stores(command);
        const groups = targets.filter((t) => t.kind === 'WorkloadGroup').map((t) => t.ref);
        const refusals = await groupChangeRefusals(stores, groups, 'delete');
        if (refusals.length > 0) {
          context.io.stderr.write(
            `${refusals.map((r) => `error: ${r}\n`).join('')}nothing was deleted\n`,
          );
          throw new ReportedFailure();
        }
        if (options.dryRun !== 'none') {
          await previewDeletes(context, stores, targets, options);
          return;
        }
        const target = context.target();
        if (target === undefined) throw new Error('the registry target is not resolved');
        const closing: Closing = {
          endpoint: managementEndpoint(options.managementEndpoint, context.io.env, target),
          region: target.region,
          warn: (line) => context.io.stderr.write(`${line}\n`),
        };
        let failed = false;
        for (const target of targets) {
          if (!(await deleteOne(context, stores, target, options.cascade, closing))) {
            if (options.ignoreNotFound) continue;
            context.io.stderr.write(`error: ${notFound(target.kind, target.ref).message}\n`);
            failed = true;
          }
        }
        if (failed) throw new ReportedFailure();
      },
    );
};

/** What the command line names; every argument is checked before anything is deleted. */
async function targetsOf(
  context: CliContext,
  stores: () => Promise<Stores>,
  resource: string | undefined,
  names: string[],
  options: DeleteOptions,
): Promise<Target[]> {
  if (options.filename !== undefined) {
    if (resource !== undefined) {
      throw new UsageError('give either -f FILE or resources by name, not both');
    }
    const inputs = await readInputs(context.io, options.filename);
    const { targets, problems } = targetsOfFiles(inputs, options.namespace);
    if (problems.length > 0) {
      const lines = problems.map((problem) => `error: ${problem}\n`).join('');
      context.io.stderr.write(`${lines}nothing was deleted\n`);
      throw new ReportedFailure();
    }
    return targets;
  }
  if (resource === undefined) {
    throw new UsageError(
      `name what to delete: TYPE NAME, TYPE/NAME or -f FILE; types: ${RESOURCE_HELP}`,
    );
  }
  const requests = parseResourceArgs('delete', [resource, ...names]);
  const namespace = namespaceOf(options);
  const selector = options.selector;
  if (selector !== undefined || options.all) {
    if (requests.some((request) => request.names.length > 0)) {
      throw new UsageError('names cannot be given with -l or --all: use one or the other');
    }
    if (selector !== undefined && options.all) {
      throw new UsageError('use either -l <selector> or --all, not both');
    }
    return selectedTargets(await stores(), requests, namespace, selector ?? []);
  }
  const unnamed = requests.find((request) => request.names.length === 0);
  if (unnamed) {
    throw new UsageError(
      `name the ${QUALIFIED[unnamed.kind]} to delete: registrar delete ${resource} NAME -n ${namespace}, or select them with -l <selector> or --all`,
    );
  }
  return requests.flatMap(({ kind, names: named }) =>
    named.map((name) => ({ kind, ref: { namespace, name } })),
  );
}

/** Every object of the types asked for in the namespace whose labels match (all: `[]`). */
async function selectedTargets(
  { catalog }: Stores,
  requests: readonly { kind: ResourceKind }[],
  namespace: string,
  selector: LabelSelector,
): Promise<Target[]> {
  const targets: Target[] = [];
  for (const { kind } of requests) {
    const objects =
      kind === 'WorkloadGroup'
        ? (await catalog.listGroups(namespace)).map((stored) => renderGroup(stored))
        : (await catalog.listEntries(namespace)).map((record) => renderEntry(record));
    for (const { metadata } of objects) {
      if (matchesSelector(selector, metadata.labels)) {
        targets.push({ kind, ref: { namespace, name: metadata.name } });
      }
    }
  }
  return targets;
}

/**
 * `--dry-run`: what would be deleted. Both modes read each target, as kubectl's client dry
 * run reads the object it would delete: a missing one is an error, as a real delete would
 * say, and a group with cascade background lists the auto-registered entries it would take
 * along (a bare `--dry-run` that named only the group hid what a delete wg really removes).
 * They differ only in what they say: `(dry run)` or `(server dry run)`.
 */
async function previewDeletes(
  context: CliContext,
  { catalog }: Stores,
  targets: readonly Target[],
  options: DeleteOptions,
): Promise<void> {
  const suffix = options.dryRun === 'server' ? '(server dry run)' : '(dry run)';
  let failed = false;
  for (const { kind, ref } of targets) {
    const shown = `${QUALIFIED[kind]} "${ref.name}"`;
    const exists =
      kind === 'WorkloadEntry'
        ? (await catalog.getEntry(ref)) !== undefined
        : (await catalog.listGroups(ref.namespace)).some((g) => g.group.metadata.name === ref.name);
    if (!exists) {
      if (options.ignoreNotFound) continue;
      context.io.stderr.write(`error: ${notFound(kind, ref).message}\n`);
      failed = true;
      continue;
    }
    context.out(`${shown} deleted ${suffix}\n`);
    if (kind === 'WorkloadGroup' && options.cascade === 'background') {
      const owned = (await catalog.listEntries(ref.namespace)).filter(
        (record) => record.autoRegistrationGroup === ref.name,
      );
      for (const record of owned) {
        context.out(
          `${QUALIFIED.WorkloadEntry} "${record.entry.metadata.name}" deleted (owned by the group) ${suffix}\n`,
        );
      }
    }
  }
  if (failed) throw new ReportedFailure();
}

/**
 * The objects `-f` names: only kind, metadata.name and metadata.namespace are read (a
 * document need not be valid to be deleted); all documents are checked before any delete.
 */
function targetsOfFiles(
  files: InputFile[],
  namespace: string | undefined,
): { targets: Target[]; problems: string[] } {
  const targets: Target[] = [];
  const problems: string[] = [];
  for (const file of files) {
    const prefix = files.length > 1 ? `${file.name}: ` : '';
    const documents = readDocuments(file.text);
    if (documents.length === 0) problems.push(`${prefix}no documents in the input`);
    for (const { raw, label, syntaxError } of documents) {
      const where = `${prefix}${label}`;
      if (syntaxError !== undefined) {
        problems.push(`${where}: not valid YAML or JSON: ${syntaxError}`);
        continue;
      }
      const object = (typeof raw === 'object' && raw !== null ? raw : {}) as {
        kind?: unknown;
        metadata?: { name?: unknown; namespace?: unknown };
      };
      const { kind } = object;
      if (kind !== 'WorkloadGroup' && kind !== 'WorkloadEntry') {
        problems.push(
          `${where}: kind: must be WorkloadGroup or WorkloadEntry, got ${showValue(kind)}`,
        );
        continue;
      }
      const name = object.metadata?.name;
      if (typeof name !== 'string' || name === '') {
        problems.push(`${where} (${kind}): metadata.name: required, got ${showValue(name)}`);
        continue;
      }
      const own = object.metadata?.namespace;
      if (own !== undefined && typeof own !== 'string') {
        problems.push(
          `${where} (${kind} ${name}): metadata.namespace: must be a string, got ${showValue(own)}`,
        );
        continue;
      }
      if (namespace !== undefined && own !== undefined && own !== namespace) {
        problems.push(
          `${where} (${kind} ${name}): metadata.namespace: is '${own}' but the command names namespace '${namespace}'; pass -n ${own} or remove the namespace from the document`,
        );
        continue;
      }
      targets.push({ kind, ref: { namespace: own ?? namespace ?? DEFAULT_NAMESPACE, name } });
    }
  }
  return { targets, problems };
}

/**
 * Deletes one object and says so; false when it was not there. An entry's holders are closed
 * after the entry is gone (never before: a reconnect that beat the delete would join the old
 * entry and be deleted with it), so the agent's reconnect creates a fresh one.
 */
async function deleteOne(
  context: CliContext,
  stores: Stores,
  { kind, ref }: Target,
  cascade: DeleteOptions['cascade'],
  closing: Closing,
): Promise<boolean> {
  const { catalog } = stores;
  if (kind === 'WorkloadEntry') {
    const removed = await catalog.removeEntry(ref, { at: context.now() });
    if (!removed) return false;
    context.out(`${QUALIFIED[kind]} "${ref.name}" deleted\n`);
    const shown = `${QUALIFIED[kind]} "${ref.name}"`;
    const holders = removed.holders.map((connectionId) => ({ entry: shown, connectionId }));
    const { closed } = await closeHolders(holders, closing.endpoint, closing.region, closing.warn);
    if (closed > 0) {
      context.out(
        `closed ${count(closed, 'connection')} that held it: its agent reconnects and registers again from the group's current template\n`,
      );
    }
    return true;
  }
  // The group goes first, so connects are refused (404) from then on. A $connect function
  // that cached the group (REGISTRAR_GROUP_CACHE_TTL, 10 s) can still register a VM
  // behind the cascade; that entry is an ordinary one and is swept once it disconnects.
  if (!(await catalog.deleteGroup(ref))) return false;
  context.out(`${QUALIFIED[kind]} "${ref.name}" deleted\n`);
  if (cascade === 'orphan') return true;
  const holders: Holder[] = [];
  const deletion = { at: context.now(), cause: { kind: 'operator', cascade: ref.name } } as const;
  await removeGroupEntries(catalog, ref, deletion, (removed) => {
    context.out(`${QUALIFIED.WorkloadEntry} "${removed.name}" deleted (owned by the group)\n`);
    const shown = `${QUALIFIED.WorkloadEntry} "${removed.name}"`;
    for (const connectionId of removed.holders) holders.push({ entry: shown, connectionId });
  });
  // Closed once every entry is gone: the agents reconnect, are refused (404) while the group
  // is missing, and keep retrying (every 10-20 s) until it is applied again.
  const { closed } = await closeHolders(holders, closing.endpoint, closing.region, closing.warn);
  if (closed > 0) {
    context.out(
      `closed ${count(closed, 'connection')} that held them: their agents register again once ${QUALIFIED[kind]} "${ref.name}" is applied again\n`,
    );
  }
  return true;
}
