import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { isAutoRegistered } from '../../lib/domain/entry-record.ts';
import { toYaml } from '../../lib/presentation/output.ts';
import type { IstioDocument } from '../../lib/protocol/istio-documents.ts';
import { appliedEntry, appliedGroup } from '../apply-preview.ts';
import { prepareEntries, readAll } from './apply.ts';
import { type CliContext, type CommandRegistration, ExitStatus, type Stores } from './context.ts';
import { namespaceOption, renderEntry, renderGroup } from './resources.ts';

interface DiffOptions {
  filename: string[];
  namespace?: string;
}

/**
 * `registrar diff -f FILE`, as `kubectl diff`: each object of the file as the registry holds
 * it (LIVE) and as `apply` would leave it (MERGED), written as YAML into two directories and
 * compared with `diff -u -N`, which prints a unified diff. Exit status as kubectl's: 0 no
 * differences, 1 differences, more than 1 an error (also the diff program's own).
 */
export const registerDiff: CommandRegistration = (program, context) => {
  program
    .command('diff')
    .description('show how the registry differs from the objects of a file (as kubectl diff)')
    .requiredOption(
      '-f, --filename <file>',
      "file with one or more documents, a directory of .yaml/.yml/.json files, or '-' for stdin; repeatable",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .addOption(namespaceOption())
    .addHelpText(
      'after',
      '\nExit status: 0 no differences, 1 differences, 2 or more an error (as kubectl diff).\n' +
        'Needs the diff program (diffutils), as kubectl diff does.',
    )
    .action(async (options: DiffOptions, command: Command) => {
      let changed: boolean;
      try {
        changed = await diffFiles(context, options, command);
      } catch (error) {
        throw new ExitStatus(2, { cause: error });
      }
      if (changed) throw new ExitStatus(1);
    });
};

async function diffFiles(context: CliContext, options: DiffOptions, command: Command) {
  const documents = await readAll(context.io, options);
  const stores = await context.stores(command);
  await prepareEntries(stores, documents, context.now());
  const dir = await mkdtemp(join(tmpdir(), 'registrar-diff-'));
  try {
    const live = join(dir, 'LIVE');
    const merged = join(dir, 'MERGED');
    await Promise.all([mkdir(live), mkdir(merged)]);
    for (const document of documents) {
      const { file, before, after } = await sides(stores, document);
      if (before !== undefined) await writeFile(join(live, file), toYaml(inOrderOf(before, after)));
      await writeFile(join(merged, file), toYaml(after));
    }
    return await runDiff(context, live, merged);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** One object as it is stored (none when new) and as apply would leave it, and its file name. */
async function sides(stores: Stores, document: IstioDocument) {
  if (document.kind === 'WorkloadGroup') {
    const { metadata } = document.group;
    const existing = await stores.registry.getGroup(metadata);
    return {
      file: `networking.istio.io.v1.WorkloadGroup.${metadata.namespace}.${metadata.name}`,
      before: existing && renderGroup(existing),
      after: appliedGroup(existing, document.group).group,
    };
  }
  const { metadata } = document.entry;
  const existing = await stores.catalog.getEntry(metadata);
  // prepareEntries refused an auto-registered entry of this name: it is never overwritten.
  const before = existing && !isAutoRegistered(existing) ? renderEntry(existing) : undefined;
  const after = appliedEntry(existing, document.entry).entry;
  return {
    file: `networking.istio.io.v1.WorkloadEntry.${metadata.namespace}.${metadata.name}`,
    before,
    after: before === undefined ? after : { ...before, ...after },
  };
}

/**
 * `live` with its keys, at every depth, in the order `merged` has them (its own others after,
 * sorted). The store does not keep a map's key order (DynamoDB's maps have none, and DynamoDB
 * Local returns them in another order than it was given), so without this an unchanged object
 * would differ line by line.
 */
export function inOrderOf(live: unknown, merged: unknown): unknown {
  if (Array.isArray(live)) {
    return live.map((item, i) => inOrderOf(item, Array.isArray(merged) ? merged[i] : undefined));
  }
  if (live === null || typeof live !== 'object') return live;
  const model =
    merged !== null && typeof merged === 'object' && !Array.isArray(merged) ? merged : {};
  const source = live as Record<string, unknown>;
  const modelKeys = Object.keys(model).filter((key) => key in source);
  const rest = Object.keys(source)
    .filter((key) => !(key in model))
    .sort();
  return Object.fromEntries(
    [...modelKeys, ...rest].map((key) => [
      key,
      inOrderOf(source[key], (model as Record<string, unknown>)[key]),
    ]),
  );
}

/** `diff -u -N LIVE MERGED`, its output passed on; true when it found differences. */
function runDiff(context: CliContext, live: string, merged: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn('diff', ['-u', '-N', live, merged], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => context.out(chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new Error(
          error.code === 'ENOENT'
            ? "the diff program is not installed: install diffutils (registrar diff runs 'diff -u -N', as kubectl diff does)"
            : `cannot run diff: ${error.message}`,
        ),
      ),
    );
    child.once('close', (code) => {
      if (code === 0 || code === 1) resolve(code === 1);
      else reject(new Error(`diff exited ${code}: ${stderr.trim()}`));
    });
  });
}
