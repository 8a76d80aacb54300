/**
 * The order vitest runs test files in: the slowest first, by the durations of a full run
 * committed in test/durations.json. vitest's own order uses the durations it caches in
 * node_modules, which a fresh clone (every CI run) lacks: it then ran files by size, and a
 * 2-minute file could start last and leave one fork idle for most of it. A file the committed
 * durations do not know (a new one) runs first, as vitest runs unknown files first: it might be
 * slow. A file that failed in this checkout's own cache still runs first.
 *
 * `node test/record-durations.ts .test-results/vitest.json .test-results/vitest-shared.json`
 * refreshes the file from a run's JSON results (docs/contributing.md, "CI stages").
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const DURATIONS = new URL('./durations.json', import.meta.url);

export function committedDurations(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(DURATIONS, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

/** Slowest first; unknown (undefined) before every known one; ties by path, for a stable order. */
export function slowestFirst(
  paths: readonly string[],
  durations: Readonly<Record<string, number>>,
): string[] {
  const weight = (path: string) => durations[path] ?? Number.POSITIVE_INFINITY;
  return [...paths].sort((a, b) => weight(b) - weight(a) || (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * `REGISTRAR_TEST_ORDER=shortest-first` (scripts/test.ts sets it for the runs beside the shared
 * forks, one fork each): the same order backwards. Their end never ends the run, and their
 * heaviest files (lambda-handler-memory's interpreted invocations, fault-injection against
 * DynamoDB Local) then run later, not in the first minute, when every step starts at once and
 * the shared forks' own fault-injection runs on the clock.
 */
export function orderOf(asked: string | undefined): 'slowest-first' | 'shortest-first' {
  if (asked === undefined || asked === '' || asked === 'slowest-first') return 'slowest-first';
  if (asked === 'shortest-first') return asked;
  throw new Error(
    `REGISTRAR_TEST_ORDER must be 'slowest-first' or 'shortest-first'; got '${asked}'`,
  );
}

export class DurationSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const byPath = new Map(files.map((file) => [relative(root, file.moduleId), file]));
    const ordered = slowestFirst([...byPath.keys()], committedDurations());
    if (orderOf(process.env.REGISTRAR_TEST_ORDER) === 'shortest-first') ordered.reverse();
    return ordered.map((path) => byPath.get(path) as TestSpecification);
  }
}
