/**
 * Writes test/durations.json, the order test/duration-sequencer.ts runs files in: each file's
 * wall time in milliseconds, rounded, sorted by path, the longest any input gives it. Inputs:
 * - vitest JSON results (`REGISTRAR_TEST_RESULTS`, which .ci/run sets, in the run's
 *   `.test-results/`: vitest.json and vitest-shared.json): from a file's first test to its last,
 *   so they leave out its `beforeAll`;
 * - `REGISTRAR_TEST_CPU` lines (test/cpu-per-file.ts): from the file's first hook to its last,
 *   so a file that does its work in `beforeAll` (lambda-handler-memory: 53 s, 3 ms in its
 *   results) is weighed by what it takes.
 * Run after a full `npm test -- --all` on the machine CI runs on, and commit the file.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Each input's files, relative to the run's checkout, with their wall time in milliseconds. */
export function durationsOf(input: string, text: string): Record<string, number> {
  const found: Record<string, number> = {};
  if (input.endsWith('.jsonl')) {
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      const { file, wallS } = JSON.parse(line) as { file: string; wallS: number };
      found[file] = Math.max(found[file] ?? 0, Math.round(wallS * 1000));
    }
    return found;
  }
  const results = JSON.parse(text) as {
    testResults: { name: string; startTime: number; endTime: number }[];
  };
  // The run's own checkout: the results file sits in its .test-results/ (a CI clone elsewhere).
  const runRoot = dirname(dirname(resolve(input)));
  for (const file of results.testResults) {
    const path = relative(file.name.startsWith(`${runRoot}/`) ? runRoot : repo, file.name);
    found[path] = Math.round(file.endTime - file.startTime);
  }
  return found;
}

/** The longest time any input gives each file, sorted by path. */
export function mergeDurations(inputs: readonly Record<string, number>[]): Record<string, number> {
  const merged: Record<string, number> = {};
  for (const input of inputs) {
    for (const [path, ms] of Object.entries(input)) merged[path] = Math.max(merged[path] ?? 0, ms);
  }
  return Object.fromEntries(Object.entries(merged).sort(([a], [b]) => (a < b ? -1 : 1)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const inputs = process.argv.slice(2);
  if (inputs.length === 0) {
    console.error(
      'usage: node test/record-durations.ts <vitest results .json | REGISTRAR_TEST_CPU .jsonl>...',
    );
    process.exit(2);
  }
  const sorted = mergeDurations(
    inputs.map((input) => durationsOf(input, readFileSync(input, 'utf8'))),
  );
  writeFileSync(join(repo, 'test/durations.json'), `${JSON.stringify(sorted, null, 2)}\n`);
  console.log(`test/durations.json: ${Object.keys(sorted).length} files`);
}
