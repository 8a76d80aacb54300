import type { Command } from 'commander';
import { isAutoRegistered } from '../../lib/domain/entry-record.ts';
import { ConflictError } from '../../lib/domain/errors.ts';
import { toRfc3339 } from '../../lib/domain/model.ts';
import { asList } from '../../lib/presentation/output.ts';
import {
  InvalidDocumentsError,
  type IstioDocument,
  parseIstioDocuments,
} from '../../lib/protocol/istio-documents.ts';
import { heartbeatQuotaRefusals } from '../../lib/registration/heartbeat-quota.ts';
import { CATALOG_ITEM_LIMITS } from '../../lib/store/catalog-item-limits.ts';
import { type ApplyOutcome, appliedEntry, appliedGroup } from '../apply-preview.ts';
import { dryRunOption } from '../dry-run-option.ts';
import { checkPaceAnnotations, groupChangeRefusals, identityWarnings } from '../group-rules.ts';
import { readInputs } from '../input-files.ts';
import { printsObjects, serializeObject } from '../object-output.ts';
import { type OutputSpec, outputOption } from '../output-option.ts';
import type { CliIo, CommandRegistration, Stores } from './context.ts';
import { namespaceOption, QUALIFIED, renderEntry, renderGroup } from './resources.ts';

interface ApplyOptions {
  filename: string[];
  namespace?: string;
  dryRun: 'none' | 'client' | 'server';
  output: OutputSpec;
}

const ONE_MINUTE_MS = 60_000;

const VERB = { created: 'created', updated: 'configured', unchanged: 'unchanged' } as const;

export const registerApply: CommandRegistration = (program, context) => {
  program
    .command('apply')
    .description('create or update WorkloadGroups and hand-made WorkloadEntries from YAML or JSON')
    .requiredOption(
      '-f, --filename <file>',
      "file with one or more documents ('---' between them), a directory of .yaml/.yml/.json files, or '-' for stdin; repeatable",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .addOption(namespaceOption())
    .addOption(
      dryRunOption({
        client: 'checks the documents without reading the registry',
        server: 'also reads it to say created, configured or unchanged',
      }),
    )
    .addOption(outputOption(['name', 'json', 'yaml', 'jsonpath', 'go-template']))
    .addHelpText(
      'after',
      '\nEvery document is checked before anything is written: one invalid document refuses the input.\n' +
        '-o name prints TYPE/NAME of each object; -o json|yaml the objects as the registry now holds\n' +
        'them (with a dry run, as the documents give them), one object or a List, as kubectl does.\n' +
        'registrar diff -f FILE shows what apply would change, line by line.',
    )
    .action(async (options: ApplyOptions, command: Command) => {
      const documents = await readAll(context.io, options);
      const { output } = options;
      if (options.dryRun === 'client') {
        if (!printOutput(context, output, documents, documents.map(objectOf))) {
          for (const document of documents) context.out(`${nameOf(document)} checked (dry run)\n`);
        }
        return;
      }
      const stores = await context.stores(command);
      const groups = documents.flatMap((d) =>
        d.kind === 'WorkloadGroup' ? [d.group.metadata] : [],
      );
      const refusals = await groupChangeRefusals(stores, groups, 'apply');
      if (refusals.length > 0) throw new InvalidDocumentsError(refusals);
      // Before anything is written: a setting that would take a namespace past its quota of
      // heartbeat checks is refused, naming the document, the annotation and its value.
      const overQuota = await heartbeatQuotaRefusals(
        {
          getSettings: (namespace, consistent) =>
            stores.namespaceSettings.getSettings(namespace, consistent),
          listGroups: (namespace) => stores.catalog.listGroups(namespace),
          heldEntryCount: (group) => stores.heartbeats.heldEntryCount(group),
        },
        documents.flatMap((d) =>
          d.kind === 'WorkloadGroup' ? [{ index: d.index, group: d.group }] : [],
        ),
        // The sweep interval the registrar runs with (a group's passes are at most that far
        // apart); the default minute when it recorded none yet.
        (await stores.sweepPolicy.read())?.sweepIntervalMs ?? ONE_MINUTE_MS,
      );
      if (overQuota.length > 0) throw new InvalidDocumentsError(overQuota);
      await prepareEntries(stores, documents, context.now());
      const lines: string[] = [];
      for (const document of documents) {
        lines.push(
          options.dryRun === 'server'
            ? `${nameOf(document)} ${VERB[await previewOne(stores, document)]} (server dry run)`
            : await applyDocument(stores, document, (text) => context.io.stderr.write(`${text}\n`)),
        );
      }
      const objects =
        options.dryRun === 'server' || !printsObjects(output)
          ? documents.map(objectOf)
          : await Promise.all(documents.map((document) => storedObject(stores, document)));
      if (!printOutput(context, output, documents, objects)) {
        context.out(lines.map((line) => `${line}\n`).join(''));
      }
    });
};

/** Parses every input before anything is written; problems of all files are reported at once. */
export async function readAll(
  io: CliIo,
  options: Pick<ApplyOptions, 'filename' | 'namespace'>,
): Promise<IstioDocument[]> {
  const documents: IstioDocument[] = [];
  const problems: string[] = [];
  const inputs = await readInputs(io, options.filename);
  for (const input of inputs) {
    const prefix = inputs.length > 1 ? `${input.name}: ` : '';
    try {
      const parseOptions = {
        limits: CATALOG_ITEM_LIMITS,
        ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
      };
      documents.push(...parseIstioDocuments(input.text, parseOptions));
    } catch (error) {
      if (!(error instanceof InvalidDocumentsError)) throw error;
      problems.push(...error.problems.map((problem) => prefix + problem));
    }
  }
  if (problems.length > 0) throw new InvalidDocumentsError(problems);
  checkPaceAnnotations(documents);
  return documents;
}

/**
 * A hand-made entry never replaces an auto-registered one (the VM's registration would be
 * lost, and the sweeper would stop owning it). Checked for every document first, so such an
 * input writes nothing; the store refuses again if a VM registers the name in between.
 *
 * Also stamps `creationTimestamp` (AGE), which the store does not: the first apply's time,
 * kept on later ones so an unchanged entry stays `unchanged`. A group's is kept by the store.
 */
export async function prepareEntries(
  stores: Stores,
  documents: IstioDocument[],
  now: number,
): Promise<void> {
  const created = toRfc3339(now);
  for (const document of documents) {
    if (document.kind === 'WorkloadGroup') {
      document.group.metadata.creationTimestamp = created;
      continue;
    }
    const { metadata } = document.entry;
    const existing = await stores.catalog.getEntry(metadata);
    if (existing && isAutoRegistered(existing)) throw autoRegisteredConflict(document);
    metadata.creationTimestamp = existing?.entry.metadata.creationTimestamp ?? created;
  }
}

function autoRegisteredConflict(
  document: IstioDocument & { kind: 'WorkloadEntry' },
): ConflictError {
  const { name, namespace } = document.entry.metadata;
  return new ConflictError(
    `document ${document.index} (WorkloadEntry ${name}): an auto-registered entry ${namespace}/${name} exists; ` +
      'a hand-made entry never replaces one: choose another name, or delete the registered entry first',
  );
}

/** Writes one parsed document as `apply` does; says `<kind>/<name> created|configured|unchanged`. */
export async function applyDocument(
  stores: Stores,
  document: IstioDocument,
  warn: (line: string) => void,
): Promise<string> {
  if (document.kind === 'WorkloadGroup') {
    const before = await stores.registry.getGroup(document.group.metadata);
    const { outcome } = await stores.catalog.applyGroup(document.group);
    if (outcome === 'updated')
      for (const line of identityWarnings(before?.group, document.group)) warn(line);
    return `${QUALIFIED.WorkloadGroup}/${document.group.metadata.name} ${VERB[outcome]}`;
  }
  const outcome = await stores.catalog.applyEntry(document.entry);
  if (outcome === 'conflict') throw autoRegisteredConflict(document);
  return `${QUALIFIED.WorkloadEntry}/${document.entry.metadata.name} ${VERB[outcome]}`;
}

/** `workloadgroup.networking.istio.io/web`, as apply reports an object. */
function nameOf(document: IstioDocument): string {
  return document.kind === 'WorkloadGroup'
    ? `${QUALIFIED.WorkloadGroup}/${document.group.metadata.name}`
    : `${QUALIFIED.WorkloadEntry}/${document.entry.metadata.name}`;
}

/** What applyDocument would report, from reads alone (`--dry-run=server`). */
async function previewOne(stores: Stores, document: IstioDocument): Promise<ApplyOutcome> {
  if (document.kind === 'WorkloadGroup') {
    const existing = await stores.registry.getGroup(document.group.metadata);
    return appliedGroup(existing, document.group).outcome;
  }
  const existing = await stores.catalog.getEntry(document.entry.metadata);
  return appliedEntry(existing, document.entry).outcome;
}

/** The object a document gives, as written (a dry run's `-o json|yaml`). */
function objectOf(document: IstioDocument): unknown {
  return document.kind === 'WorkloadGroup' ? document.group : document.entry;
}

/** The object as the registry holds it after the apply (a group with its generation). */
async function storedObject(stores: Stores, document: IstioDocument): Promise<unknown> {
  if (document.kind === 'WorkloadGroup') {
    const stored = await stores.registry.getGroup(document.group.metadata);
    return stored ? renderGroup(stored) : document.group;
  }
  const stored = await stores.catalog.getEntry(document.entry.metadata);
  return stored ? renderEntry(stored) : document.entry;
}

/**
 * `-o name`, `-o json|yaml|jsonpath|go-template`: printed instead of apply's lines (false
 * without -o: the caller prints its lines). One object alone, several as a v1 List.
 */
function printOutput(
  context: { out(text: string): void },
  output: OutputSpec,
  documents: readonly IstioDocument[],
  objects: readonly unknown[],
): boolean {
  if (output.format === 'name') {
    context.out(documents.map((document) => `${nameOf(document)}\n`).join(''));
    return true;
  }
  if (!printsObjects(output)) return false;
  const value = objects.length === 1 ? objects[0] : asList(objects as never[]);
  context.out(serializeObject(output, value));
  return true;
}
