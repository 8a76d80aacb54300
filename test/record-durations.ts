/**
 * Writes test/durations.json from vitest JSON results files (`REGISTRAR_TEST_RESULTS`, which
 * .ci/run sets, in the run's `.test-results/`): each file's wall time in milliseconds, rounded,
 * sorted by path. Run after a
 * full `npm test -- --all` on the machine CI runs on, and commit the file.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
// Several files: npm test's two vitest runs write two (vitest.json, and vitest-shared.json for
// the files that share forks).
const inputs = process.argv.slice(2);
if (inputs.length === 0) {
  console.error('usage: node test/record-durations.ts <vitest results .json>...');
  process.exit(2);
}
const durations: Record<string, number> = {};
for (const input of inputs) {
  const results = JSON.parse(readFileSync(input, 'utf8')) as {
    testResults: { name: string; startTime: number; endTime: number }[];
  };
  // The run's own checkout: the results file sits in its .test-results/ (a CI clone elsewhere).
  const runRoot = dirname(dirname(resolve(input)));
  for (const file of results.testResults) {
    const path = relative(file.name.startsWith(`${runRoot}/`) ? runRoot : repo, file.name);
    durations[path] = Math.round(file.endTime - file.startTime);
  }
}
const sorted = Object.fromEntries(Object.entries(durations).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(join(repo, 'test/durations.json'), `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test/durations.json: ${Object.keys(sorted).length} files`);
