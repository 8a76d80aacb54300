import { configDefaults, defineConfig } from 'vitest/config';
import { DurationSequencer } from './test/duration-sequencer.ts';
import { sharedProcessFiles } from './test/shared-process.ts';

/**
 * `only`: the files that may share a fork (test/shared-process.ts), run without isolation;
 * `skip`: every other file, each in a fork of its own. npm test runs both (scripts/test.ts: in
 * the fast loop one after the other, in `--all` side by side); unset (vitest alone,
 * `npm test -- <filter>`), every file in a fork of its own.
 */
const shared = sharedMode(process.env.REGISTRAR_TEST_SHARED);
const sharedFiles = shared === undefined ? [] : sharedProcessFiles(import.meta.dirname);
// .ci/run asks for a JSON copy of the results to print one plain summary line at the end (the
// shared files' run writes its own beside it).
const resultsFile =
  shared === 'only'
    ? process.env.REGISTRAR_TEST_RESULTS?.replace(/(\.json)?$/, '-shared.json')
    : process.env.REGISTRAR_TEST_RESULTS;
const leaveOutRealCluster =
  process.env.CI === 'true' && process.env.REGISTRAR_REAL_CLUSTER_STAGE !== '1';

function testForks(): number {
  const asked = process.env.REGISTRAR_TEST_FORKS;
  if (asked === undefined || asked === '') return 2;
  const forks = Number(asked);
  if (!Number.isInteger(forks) || forks < 1) {
    throw new Error(
      `REGISTRAR_TEST_FORKS must be a whole number of forks, 1 or more; got '${asked}'`,
    );
  }
  return forks;
}

function sharedMode(asked: string | undefined): 'only' | 'skip' | undefined {
  if (asked === undefined || asked === '') return undefined;
  if (asked === 'only' || asked === 'skip') return asked;
  throw new Error(`REGISTRAR_TEST_SHARED must be 'only' or 'skip'; got '${asked}'`);
}

export default defineConfig({
  test: {
    include: shared === 'only' ? sharedFiles : ['test/**/*.test.ts'],
    // In CI the real-cluster tests run in a stage of their own after `npm test -- --all`
    // (test/real-cluster/stage.sh, from .ci/run), not twice (they start their own dynalite, so
    // the DynamoDB Local pass leaves them out: test/dynamodb-local-files.ts). Elsewhere they run
    // with the rest when test/real-cluster/build.sh has built their binaries, and skip with one
    // line otherwise.
    exclude: [
      ...configDefaults.exclude,
      ...(leaveOutRealCluster ? ['test/integration/real-cluster-*.test.ts'] : []),
      ...(shared === 'skip' ? sharedFiles : []),
    ],
    // Every temporary file of the run under one directory, removed at the end.
    globalSetup: ['test/global-tmpdir.ts'],
    // REGISTRAR_TEST_CPU=<file>: each test file's CPU and wall time, a JSON line each
    // (test/cpu-per-file.ts; `node test/cpu-report.ts <file>` ranks them).
    // In the shared forks, a file that leaves a server, socket, child or timer running fails
    // (test/shared-fork-leftovers.ts).
    setupFiles: [
      ...(shared === 'only' ? ['test/shared-fork-leftovers.ts'] : []),
      ...(process.env.REGISTRAR_TEST_CPU ? ['test/cpu-per-file.ts'] : []),
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration suites start servers on random ports, each file in a fork of its own.
    pool: 'forks',
    // The slowest files first, from committed durations (a fresh clone has no cache of them).
    sequence: { sequencer: DurationSequencer },
    // Two forks unless REGISTRAR_TEST_FORKS sets another count (npm test -- --all: four shared,
    // one for the files of their own, one for the DynamoDB Local pass; docs/contributing.md,
    // "CI stages"; 1 on a machine that must stay quiet).
    // Shared forks live for the whole run (minForks = maxForks): with fewer, tinypool retires a
    // fork the moment it idles, and a retired fork that had run integration files failed the
    // run with an unhandled "Terminating worker thread" (reproduced: 42 integration files on
    // three forks, minForks 1).
    poolOptions: {
      forks: {
        maxForks: testForks(),
        minForks: shared === 'only' ? testForks() : 1,
        isolate: shared !== 'only',
      },
    },
    reporters: resultsFile ? ['default', ['json', { outputFile: resultsFile }]] : ['default'],
    // The functions run inside the test processes: keep their JSON logs and EMF metrics out of
    // the test output. A test about logging sets its own level.
    // Every hit of the local store's expression cache is checked against a fresh parse
    // (infra/local/dynalite-expression-cache.ts): the whole suite is its equivalence test.
    env: {
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
      REGISTRAR_DYNALITE_PARSE_CHECK: '1',
    },
  },
});
