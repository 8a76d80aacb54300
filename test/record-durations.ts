/**
 * Writes test/durations.json from a vitest JSON results file (`REGISTRAR_TEST_RESULTS`, which
 * .ci/run sets, in the run's `.test-results/`): each file's wall time in milliseconds, rounded,
 * sorted by path. Run after a
 * full `npm test -- --all` on the machine CI runs on, and commit the file.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const input = process.argv[2];
if (!input) {
  console.error('usage: node test/record-durations.ts <vitest results .json>');
  process.exit(2);
}
const results = JSON.parse(readFileSync(input, 'utf8')) as {
  testResults: { name: string; startTime: number; endTime: number }[];
};
const durations: Record<string, number> = {};
// The run's own checkout: the results file sits in its .test-results/ (a CI clone elsewhere).
const runRoot = dirname(dirname(resolve(input)));
for (const file of results.testResults) {
  const path = relative(file.name.startsWith(`${runRoot}/`) ? runRoot : repo, file.name);
  durations[path] = Math.round(file.endTime - file.startTime);
}
const sorted = Object.fromEntries(Object.entries(durations).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(join(repo, 'test/durations.json'), `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test/durations.json: ${Object.keys(sorted).length} files`);
