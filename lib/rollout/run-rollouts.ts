import { type EpochMillis, formatRef, type ObjectRef } from '../domain/model.ts';
import type { StoredGroup } from '../domain/registry-records.ts';
import { rolledOutEntry } from '../domain/template-rollout.ts';
import type { CatalogStore } from '../registration/catalog-store.ts';
import { listAllGroups } from './list-groups.ts';
import { PacedPool } from './paced-pool.ts';
import { paceOf } from './rollout-pace.ts';
import {
  afterPage,
  type NextStep,
  nextStep,
  type PageResult,
  startedRollout,
  steppedRollout,
} from './rollout-progress.ts';
import type { RolloutEntry, RolloutRecord, RolloutStore } from './rollout-store.ts';

export interface RolloutRunDeps {
  store: RolloutStore;
  /** Every group of every namespace (the namespace index, then a Query each; never a Scan). */
  groups: Pick<CatalogStore, 'listNamespaces' | 'listGroups'>;
  now(): EpochMillis;
  sleep(ms: number): Promise<void>;
  /**
   * After each entry a rollout changed (its TemplateUpdated event is already in the entry,
   * written by the same conditional write): for a caller that counts or logs them.
   */
  onEntryRolledOut?(entry: ObjectRef, from: number | undefined, to: number): void;
}

export interface RolloutRunOptions {
  /** No page is started after this (the run ends well inside its invocation's time). */
  deadline: EpochMillis;
  /** Entry writes per second over the whole run: see PacedPool on the partition ceiling. */
  writesPerSecond: number;
  concurrency: number;
  /** Entries read per page (before the generation filter). */
  pageSize: number;
  /** When some entries are left (waiting for a reconnect, or losing races): look again after this. */
  recheckMs: number;
  /** Ends the run at the next page (the local runtime stopping); progress so far is saved. */
  signal?: AbortSignal;
}

export interface RolloutRunSummary {
  /** Entries this run brought to their group's template, by group (`<namespace>/<name>`). */
  rolled: Record<string, number>;
  updated: number;
  conflicts: number;
  /** Rollouts that changed entries and finished in this run, with the generation they are on. */
  completed: { group: string; generation: number }[];
  paused: string[];
  /** Entries left for their agent's next connect (see RolloutRecord.waiting). */
  waiting: number;
  /** Groups whose pace annotation is invalid (the default pace is used). */
  problems: string[];
  /** The deadline came with work left: the next run continues from the saved cursor. */
  stoppedEarly: boolean;
}

/** Tries of one entry's write against racing connects and health reports before the next pass. */
const ATTEMPTS = 3;

/**
 * One run of the template rollouts: finds the groups whose entries are on an older generation
 * than the group, and brings them to the current template a step at a time (each group's pace),
 * every entry with one conditional write, round-robin over the groups page by page so one
 * large rollout does not hold back another. Progress is saved after every page (the cursor),
 * so a run that stops at its deadline, or dies, is resumed by the next.
 */
export async function runRollouts(
  deps: RolloutRunDeps,
  options: RolloutRunOptions,
): Promise<RolloutRunSummary> {
  const summary: RolloutRunSummary = {
    rolled: {},
    updated: 0,
    conflicts: 0,
    completed: [],
    paused: [],
    waiting: 0,
    problems: [],
    stoppedEarly: false,
  };
  const pool = new PacedPool({
    concurrency: options.concurrency,
    perSecond: options.writesPerSecond,
    now: deps.now,
    sleep: deps.sleep,
  });
  const groups = await listAllGroups(deps.groups);
  let records = byGroup(await deps.store.listRollouts());
  await forgetDeletedGroups(deps.store, records, groups);
  let active: readonly StoredGroup[] = groups;
  while (active.length > 0) {
    const round: { stored: StoredGroup; step: NextStep }[] = [];
    for (const stored of active) {
      if (deps.now() >= options.deadline || options.signal?.aborted) {
        summary.stoppedEarly = true;
        return summary;
      }
      const step = await advance(deps, options, pool, summary, stored, records);
      if (step.kind === 'write' || step.kind === 'wait') round.push({ stored, step });
    }
    active = round.map(({ stored }) => stored);
    if (!round.some(({ step }) => step.kind === 'write')) {
      const earliest = Math.min(
        ...round.map(({ step }) => (step.kind === 'wait' ? step.until : 0)),
      );
      if (round.length === 0) break;
      if (earliest >= options.deadline || options.signal?.aborted) {
        summary.stoppedEarly = true;
        break;
      }
      await deps.sleep(Math.max(0, earliest - deps.now()));
    }
    // Between rounds, the operator may have paused or resumed a rollout.
    records = byGroup(await deps.store.listRollouts());
  }
  return summary;
}

/**
 * One page of one group's rollout, or the decision to wait or stop; then what comes next for
 * it. Re-reads the group consistently first: an apply that landed since changes the target
 * at once, and a group deleted since ends its rollout.
 */
async function advance(
  deps: RolloutRunDeps,
  options: RolloutRunOptions,
  pool: PacedPool,
  summary: RolloutRunSummary,
  listed: StoredGroup,
  records: Map<string, RolloutRecord>,
): Promise<NextStep> {
  const ref = { namespace: listed.group.metadata.namespace, name: listed.group.metadata.name };
  const key = formatRef(ref);
  let record = records.get(key);
  // The listing is fresh enough to skip a finished rollout without reading the group.
  if (
    record?.generation === listed.generation &&
    nextStep(record, paceOf(listed.group).pace, deps.now()).kind === 'idle'
  ) {
    return { kind: 'idle' };
  }
  const stored = await deps.store.getGroup(ref);
  if (!stored) {
    if (record) await deps.store.deleteRollout(ref);
    records.delete(key);
    return { kind: 'idle' };
  }
  const { pace, problem } = paceOf(stored.group);
  if (problem && !summary.problems.includes(`${key}: ${problem}`)) {
    summary.problems.push(`${key}: ${problem}`);
  }
  if (record?.generation !== stored.generation) {
    const total = (await deps.store.groupEntries(ref)).length;
    record = startedRollout(record, ref, stored.generation, total, deps.now());
  }
  const step = nextStep(record, pace, deps.now());
  if (step.kind === 'paused' && !summary.paused.includes(key)) summary.paused.push(key);
  if (step.kind !== 'write') {
    if (record !== records.get(key) && !(await save(deps, records, record))) {
      return { kind: 'idle' };
    }
    return step;
  }
  record = steppedRollout(record, step);
  const page = await deps.store.outdatedEntries(
    ref,
    stored.generation,
    record.cursor,
    Math.max(1, Math.min(options.pageSize, step.quota)),
  );
  const counts = { conflicts: 0 };
  const outcomes = await pool.map(page.entries, (entry) => rollOne(deps, stored, entry, counts));
  const result: PageResult = {
    updated: outcomes.filter((o) => o === 'updated').length,
    waiting: outcomes.filter((o) => o === 'waiting').length,
    skipped: outcomes.filter((o) => o === 'skipped').length,
    next: page.next,
  };
  summary.updated += result.updated;
  summary.waiting += result.waiting;
  summary.conflicts += counts.conflicts;
  if (result.updated > 0) summary.rolled[key] = (summary.rolled[key] ?? 0) + result.updated;
  record = afterPage(record, result, deps.now(), options.recheckMs);
  if (!(await save(deps, records, record))) return { kind: 'idle' };
  if (record.completedAt !== undefined) {
    // Only a rollout that changed entries is news (a group seen for the first time is not).
    if (record.updated > 0) summary.completed.push({ group: key, generation: stored.generation });
    return { kind: 'idle' };
  }
  return nextStep(record, pace, deps.now());
}

type EntryOutcome = 'updated' | 'waiting' | 'skipped' | 'done';

/**
 * One entry: rebuilt from the template with the agent's labels winning, written if still at
 * the revision read. A lost race re-reads: gone or already on the generation is done.
 */
async function rollOne(
  deps: RolloutRunDeps,
  stored: StoredGroup,
  read: RolloutEntry,
  counts: { conflicts: number },
): Promise<EntryOutcome> {
  let entry: RolloutEntry | undefined = read;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    if (!entry || (entry.groupGeneration ?? 0) >= stored.generation) return 'done';
    // An entry of a release before rollouts does not know which labels its agent gave:
    // rebuilding it could drop them. Its agent's next connect (within 2 h) records them.
    if (!entry.agentGiven) return 'waiting';
    const rebuilt = rolledOutEntry(entry.entry, stored.group, entry.agentGiven);
    const name = stored.group.metadata.name;
    const written = await deps.store.rollOutEntry(
      entry,
      name,
      rebuilt,
      stored.generation,
      deps.now(),
    );
    if (written === 'updated') {
      deps.onEntryRolledOut?.(entry.ref, entry.groupGeneration, stored.generation);
      return 'updated';
    }
    counts.conflicts += 1;
    entry = await deps.store.getRolloutEntry(entry.ref);
  }
  return 'skipped';
}

async function save(
  deps: RolloutRunDeps,
  records: Map<string, RolloutRecord>,
  record: RolloutRecord,
): Promise<boolean> {
  const key = formatRef(record.group);
  if (!(await deps.store.saveRollout(record))) {
    records.delete(key);
    return false;
  }
  records.set(key, { ...record, revision: record.revision + 1 });
  return true;
}

/** A record whose group is gone (deleted, cascade done) is dropped, unless a removal waits. */
async function forgetDeletedGroups(
  store: RolloutStore,
  records: Map<string, RolloutRecord>,
  groups: readonly StoredGroup[],
): Promise<void> {
  const present = new Set(groups.map((g) => formatRef(g.group.metadata)));
  for (const [key, record] of records) {
    if (present.has(key) || record.removal !== undefined) continue;
    await store.deleteRollout(record.group);
    records.delete(key);
  }
}

function byGroup(records: readonly RolloutRecord[]): Map<string, RolloutRecord> {
  return new Map(records.map((record) => [formatRef(record.group), record]));
}
