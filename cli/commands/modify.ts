import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import { parse, stringify } from 'yaml';
import { isAutoRegistered } from '../../lib/domain/entry-record.ts';
import { InvalidRequestError } from '../../lib/domain/errors.ts';
import type { ObjectRef } from '../../lib/domain/model.ts';
import { InvalidDocumentsError, parseIstioDocuments } from '../../lib/protocol/istio-documents.ts';
import { CATALOG_ITEM_LIMITS } from '../../lib/store/catalog-item-limits.ts';
import { type DryRunMode, dryRunOption, dryRunSuffix } from '../dry-run-option.ts';
import { checkPaceAnnotations, groupChangeRefusals } from '../group-rules.ts';
import { jsonPatch, mergePatch, PatchError } from '../object-patch.ts';
import { ownedFieldChanged } from '../owned-fields.ts';
import { applyDocument, prepareEntries } from './apply.ts';
import type { CliContext, CommandRegistration, Stores } from './context.ts';
import { UsageError } from './context.ts';
import {
  namespaceOf,
  namespaceOption,
  notFound,
  QUALIFIED,
  type ResourceKind,
  renderEntry,
  renderGroup,
  resourceKind,
} from './resources.ts';

/**
 * kubectl's everyday verbs on the registry's objects: `label`, `annotate`, `patch` (merge and
 * JSON patch) and `edit` ($KUBE_EDITOR, $EDITOR, else vi). Each reads the object as `get -o yaml`
 * prints it, changes it, and writes it as `apply` would (the same validation, the same refusals:
 * a group whose groups come from a cluster, a forged system annotation). A change to a field the
 * registrar owns (the object's identity and bookkeeping, and all of an auto-registered
 * WorkloadEntry, which its WorkloadGroup and its VM make) is refused, naming the field, and
 * nothing is written.
 */

interface ModifyOptions {
  namespace?: string;
  dryRun: DryRunMode;
  overwrite?: boolean;
  patch?: string;
  type?: 'merge' | 'json';
}

type Change = (
  object: Record<string, unknown>,
) => Promise<Record<string, unknown>> | Record<string, unknown>;

export const registerLabel: CommandRegistration = (program, context) =>
  registerMapVerb(program, context, 'label', 'labels');
export const registerAnnotate: CommandRegistration = (program, context) =>
  registerMapVerb(program, context, 'annotate', 'annotations');

function registerMapVerb(
  program: Command,
  context: CliContext,
  verb: 'label' | 'annotate',
  field: 'labels' | 'annotations',
): void {
  program
    .command(verb)
    .description(`update the ${field} of a workloadgroup (wg) or hand-made workloadentry (we)`)
    .argument('<resource>', 'wg or we')
    .argument('<name>')
    .argument('<changes...>', `KEY=VALUE to set, KEY- to remove`)
    .addOption(namespaceOption())
    .option('--overwrite', 'replace a value that is already set')
    .addOption(writeDryRun())
    .action(
      async (
        resource: string,
        name: string,
        changes: string[],
        options: ModifyOptions,
        command: Command,
      ) => {
        const edits = changes.map((text) => mapEdit(text, field));
        await modify(
          context,
          command,
          options,
          resource,
          name,
          `${verb === 'label' ? 'labeled' : 'annotated'}`,
          (object) => {
            const metadata = { ...(object.metadata as Record<string, unknown>) };
            const map = { ...((metadata[field] as Record<string, string> | undefined) ?? {}) };
            for (const edit of edits) {
              if (edit.value === undefined) {
                delete map[edit.key];
                continue;
              }
              const old = map[edit.key];
              if (old !== undefined && old !== edit.value && !options.overwrite) {
                throw new UsageError(
                  `'${edit.key}' already has a value (${old}), and --overwrite is false`,
                );
              }
              map[edit.key] = edit.value;
            }
            if (Object.keys(map).length > 0) metadata[field] = map;
            else delete metadata[field];
            return { ...object, metadata };
          },
        );
      },
    );
}

export const registerPatch: CommandRegistration = (program, context) => {
  program
    .command('patch')
    .description(
      'update fields of a workloadgroup (wg) or hand-made workloadentry (we) with a merge or JSON patch',
    )
    .argument('<resource>', 'wg or we')
    .argument('<name>')
    .requiredOption('-p, --patch <patch>', 'the patch, JSON or YAML')
    .addOption(
      new Option(
        '--type <type>',
        'merge (RFC 7386) or json (RFC 6902); strategic is for built-in kinds only',
      )
        .choices(['merge', 'json'])
        .default('merge'),
    )
    .addOption(namespaceOption())
    .addOption(writeDryRun())
    .action(async (resource: string, name: string, options: ModifyOptions, command: Command) => {
      let patch: unknown;
      try {
        patch = parse(options.patch ?? '');
      } catch (error) {
        throw new UsageError(
          `--patch: not JSON or YAML: ${(error as Error).message.split('\n')[0]}`,
        );
      }
      await modify(context, command, options, resource, name, 'patched', (object) => {
        try {
          const patched =
            options.type === 'json' ? jsonPatch(object, patch) : mergePatch(object, patch);
          if (typeof patched !== 'object' || patched === null || Array.isArray(patched)) {
            throw new PatchError('the patch leaves no object');
          }
          return patched as Record<string, unknown>;
        } catch (error) {
          if (error instanceof PatchError) throw new UsageError(`--patch: ${error.message}`);
          throw error;
        }
      });
    });
};

export const registerEdit: CommandRegistration = (program, context) => {
  program
    .command('edit')
    .description(
      'edit a workloadgroup (wg) or hand-made workloadentry (we) in $KUBE_EDITOR or $EDITOR',
    )
    .argument('<resource>', 'wg or we')
    .argument('<name>')
    .addOption(namespaceOption())
    .addOption(writeDryRun())
    .action(async (resource: string, name: string, options: ModifyOptions, command: Command) => {
      await modify(context, command, options, resource, name, 'edited', (object) =>
        inEditor(context, object),
      );
    });
};

function writeDryRun(): Option {
  return dryRunOption({ client: 'shows the change without writing it', server: 'the same' });
}

/** `KEY=VALUE` or `KEY-`. */
function mapEdit(text: string, field: string): { key: string; value?: string } {
  if (text.endsWith('-') && !text.includes('=')) return { key: text.slice(0, -1) };
  const at = text.indexOf('=');
  if (at <= 0) {
    throw new UsageError(`'${text}' is not KEY=VALUE or KEY- (${field} to set or remove)`);
  }
  return { key: text.slice(0, at), value: text.slice(at + 1) };
}

async function modify(
  context: CliContext,
  command: Command,
  options: ModifyOptions,
  resource: string,
  name: string,
  done: string,
  change: Change,
): Promise<void> {
  const kind = resourceKind(resource);
  const ref: ObjectRef = { namespace: namespaceOf(options), name };
  const stores = await context.stores(command);
  const { object, group } = await current(stores, kind, ref);
  const autoRegistered = group !== undefined;
  const changed = await change(structuredClone(object));
  const label = `${QUALIFIED[kind]}/${name}`;
  const owned = ownedFieldChanged(object, changed, autoRegistered);
  if (owned !== undefined) {
    throw new InvalidRequestError(
      autoRegistered
        ? `${label}: ${owned}: an auto-registered WorkloadEntry is made from its WorkloadGroup and its VM, and the registrar owns all of it; change WorkloadGroup ${ref.namespace}/${group} (a template change reaches its live entries), or take the VM out of traffic with registrar cordon; nothing was written`
        : `${label}: ${owned}: is set by the registrar and cannot be changed; nothing was written`,
    );
  }
  if (JSON.stringify(changed) === JSON.stringify(object)) {
    context.out(`${label} ${done} (no change)\n`);
    return;
  }
  const documents = parseIstioDocuments(JSON.stringify(changed), {
    namespace: ref.namespace,
    limits: CATALOG_ITEM_LIMITS,
  });
  checkPaceAnnotations(documents);
  const groups = documents.flatMap((d) => (d.kind === 'WorkloadGroup' ? [d.group.metadata] : []));
  const refusals = await groupChangeRefusals(stores, groups, 'apply');
  if (refusals.length > 0) throw new InvalidDocumentsError(refusals);
  if (options.dryRun !== 'none') {
    context.out(`${label} ${done} ${dryRunSuffix(options.dryRun)}\n`);
    return;
  }
  await prepareEntries(stores, documents, context.now());
  for (const document of documents) {
    await applyDocument(stores, document, (text) => context.io.stderr.write(`${text}\n`));
  }
  context.out(`${label} ${done}\n`);
}

/**
 * The object as `get -o yaml` prints it and, for an auto-registered entry (which the
 * registrar owns all of), the group it was made from.
 */
async function current(
  stores: Stores,
  kind: ResourceKind,
  ref: ObjectRef,
): Promise<{ object: Record<string, unknown>; group?: string }> {
  if (kind === 'WorkloadGroup') {
    const stored = await stores.registry.getGroup(ref);
    if (!stored) throw notFound(kind, ref);
    return { object: renderGroup(stored) as unknown as Record<string, unknown> };
  }
  const record = await stores.catalog.getEntry(ref);
  if (!record) throw notFound(kind, ref);
  const object = renderEntry(record) as unknown as Record<string, unknown>;
  return isAutoRegistered(record) ? { object, group: record.autoRegistrationGroup } : { object };
}

/**
 * Opens the object as YAML in the operator's editor (`$KUBE_EDITOR`, `$EDITOR`, else `vi`, run
 * by the shell so an editor with arguments works, as kubectl does) and reads it back. The
 * temporary directory goes whatever happens.
 */
async function inEditor(
  context: CliContext,
  object: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const editor = context.io.env.KUBE_EDITOR || context.io.env.EDITOR || 'vi';
  const dir = await mkdtemp(join(tmpdir(), 'registrar-edit-'));
  try {
    const file = join(dir, 'object.yaml');
    const header =
      '# Edit the object below. Lines beginning with # are ignored; an unchanged file changes nothing.\n' +
      '# Fields the registrar sets (uid, generation, creationTimestamp, name, namespace) cannot be changed.\n';
    await writeFile(file, header + stringify(object));
    const code = await new Promise<number>((resolve, reject) => {
      const child = spawn('sh', ['-c', `${editor} "$1"`, 'sh', file], {
        stdio: 'inherit',
        env: { ...process.env, ...context.io.env },
      });
      child.once('error', reject);
      child.once('exit', (exit) => resolve(exit ?? 1));
    });
    if (code !== 0)
      throw new UsageError(`the editor (${editor}) exited with ${code}; nothing was written`);
    const text = await readFile(file, 'utf8');
    let edited: unknown;
    try {
      edited = parse(text);
    } catch (error) {
      throw new UsageError(
        `the edited object is not YAML: ${(error as Error).message.split('\n')[0]}; nothing was written`,
      );
    }
    if (typeof edited !== 'object' || edited === null || Array.isArray(edited)) {
      throw new UsageError('the edited file holds no object; nothing was written');
    }
    return edited as Record<string, unknown>;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
