/**
 * Prints one line totalling vitest's JSON result files: `tests: N passed, N failed, N skipped`.
 * .ci/run ends with it so that a reader of the log (or a tool) sees the totals of both runs,
 * dynalite and DynamoDB Local, in one place.
 */
import { readFileSync } from 'node:fs';

interface VitestJson {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
}

let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of process.argv.slice(2)) {
  const results = JSON.parse(readFileSync(file, 'utf8')) as VitestJson;
  passed += results.numPassedTests;
  failed += results.numFailedTests;
  skipped += results.numPendingTests + results.numTodoTests;
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exitCode = failed > 0 || passed === 0 ? 1 : 0;
