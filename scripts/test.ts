/**
 * `npm test`: the fast loop (type-check and lint beside the unit, infrastructure and store
 * contract tests, about 1 minute); `npm test -- --all`: the whole chain (type-check, lint and
 * the DynamoDB Local pass beside every test), what CI runs; given file filters or a test
 * name, vitest alone on those. `npm test -- --help` says how.
 *
 * Each step runs in a process group of its own, tied to this process (scripts/process-group.ts):
 * Ctrl-C, a `kill` of npm or of this script, even `kill -9`, ends the step with everything it
 * started (forks, local runtimes, agents, Chromium), and a step that exits leaves nothing of
 * its group behind. A runtime a test leaked cannot outlive the run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { watchParent } from '../infra/local/parent-watch.ts';
import { guardProcessGroup, signalGroup } from './process-group.ts';
import { prerequisites } from './test-prerequisites.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');

export const HELP = `usage: npm test [-- [options] [file filters...] [-- vitest options...]]

  npm test                        the fast loop (~1 min): type-check and lint beside the unit,
                                  infrastructure and store contract tests; says what it skipped
  npm test -- --all               everything (what CI runs, 11-12 min): type-check and lint beside
                                  every test, and beside them the files that reach the store
                                  again against DynamoDB Local (when Java is installed)
  npm test -- sweep               only vitest, on the test files whose path contains 'sweep'
  npm test -- test/unit/a.test.ts test/unit/b.test.ts
  npm test -- -t 'late disconnect'   only the tests whose name matches, in every file
  npm test -- sweep -- --reporter=verbose   after a second '--': passed to vitest as is

options:
  --all                       every test, as CI runs them
  -t, --test-name <pattern>   only tests whose name matches (vitest -t)
  -h, --help                  this text

Prerequisites beyond 'npm ci': Chromium for the dashboard's browser tests, Java 17 for the
DynamoDB Local run, the git history and the npm registry for the upgrade tests, qemu-user and
Debian's arm64 cross libraries for the agent's aarch64 executable. Outside CI a
missing one skips those tests with a line saying how to install it; with CI=true it fails.
Ctrl-C stops every step and everything a test started.
`;

export interface TestPlan {
  help: boolean;
  /** vitest's arguments after `run`; undefined: a chain (the fast loop, or `all`). */
  vitestOnly: string[] | undefined;
  /** The whole chain (`--all`) instead of the fast loop. */
  all: boolean;
}

export class UsageError extends Error {}

/** Reads `npm test -- <args>`; throws UsageError naming an option it does not know. */
export function planOf(args: readonly string[]): TestPlan {
  const filters: string[] = [];
  const passed: string[] = [];
  let all = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      passed.push(...args.slice(i + 1));
      break;
    }
    if (arg === '-h' || arg === '--help') return { help: true, vitestOnly: undefined, all: false };
    if (arg === '--all') {
      all = true;
      continue;
    }
    if (arg === '-t' || arg === '--test-name') {
      const pattern = args[i + 1];
      if (pattern === undefined || pattern === '') {
        throw new UsageError(`${arg} needs a pattern: npm test -- ${arg} 'part of a test name'`);
      }
      passed.push('-t', pattern);
      i++;
      continue;
    }
    if (arg.startsWith('--test-name=')) {
      passed.push('-t', arg.slice('--test-name='.length));
      continue;
    }
    if (arg.startsWith('-')) {
      throw new UsageError(
        `unknown option '${arg}'; see 'npm test -- --help' (vitest's own options go after a second '--')`,
      );
    }
    filters.push(arg);
  }
  const vitest = [...filters, ...passed];
  if (all && vitest.length > 0) {
    throw new UsageError('--all runs every test: give it no file filter or test name');
  }
  return { help: false, vitestOnly: vitest.length > 0 ? vitest : undefined, all };
}

/**
 * The fast loop's test files: unit, infrastructure (CDK assertions, bundles) and the store
 * contract tests (each DynamoDB adapter against dynalite: `dynamodb-*` and `*-store` files).
 * What it leaves out is everything that starts a runtime, an agent or a browser.
 */
export function fastLoopFiles(repo: string): { run: string[]; skipped: number } {
  const contract = readdirSync(join(repo, 'test/integration'))
    .filter((name) => /^dynamodb-.*\.test\.ts$|-store\.test\.ts$/.test(name))
    .sort()
    .map((name) => `test/integration/${name}`);
  const slow = ['test/integration', 'test/property'].flatMap((dir) =>
    readdirSync(join(repo, dir)).filter((n) => n.endsWith('.test.ts')),
  ).length;
  return { run: ['test/unit', 'test/infra', ...contract], skipped: slow - contract.length };
}

export interface Step {
  title: string;
  command: string;
  args: string[];
  /** Runs beside the steps after it (the static checks beside the tests), joined at the end. */
  beside?: boolean;
  /** Put before each line it prints: a step beside another step that prints as much. */
  prefix?: string;
  env?: Record<string, string>;
  /**
   * Its nice value (and its children's): a batch job (tsc, Biome) yields the CPU to the tests,
   * whose agents, sweeps and timeouts run on the clock, and fills what they leave idle.
   */
  nice?: number;
}

/** The static checks' nice value: the CPU goes to the tests first (docs/contributing.md). */
export const BATCH_NICE = 10;

const node = (script: string, ...args: string[]): Step['args'] => [script, ...args];

export function steps(plan: TestPlan): Step[] {
  const vitest = { title: 'vitest', command: process.execPath };
  if (plan.vitestOnly) {
    return [{ ...vitest, args: node('node_modules/vitest/vitest.mjs', 'run', ...plan.vitestOnly) }];
  }
  // The static checks run beside the tests, niced: tsc and Biome fit in the gaps the tests leave
  // and never slow a test that runs on the clock (docs/contributing.md, "CI stages").
  const statics: Step[] = [
    {
      title: 'type-check',
      command: 'npm',
      args: ['run', '--silent', 'typecheck'],
      beside: true,
      nice: BATCH_NICE,
    },
    {
      title: 'lint',
      command: 'npm',
      args: ['run', '--silent', 'lint'],
      beside: true,
      nice: BATCH_NICE,
    },
  ];
  // The files that change no process-wide state share forks (test/shared-process.ts: unit,
  // infrastructure, most integration and property files; each fork imports the SDK, dynalite
  // and aws-cdk-lib once, not once a file), and every other file runs in a fork of its own.
  // --passWithNoTests: a filter may leave one of the two with no file.
  const vitestOn = (
    files: string[],
    shared: 'only' | 'skip',
    forks: string | undefined,
    title: string,
  ) => ({
    ...vitest,
    title,
    args: node('node_modules/vitest/vitest.mjs', 'run', '--passWithNoTests', ...files),
    env: { REGISTRAR_TEST_SHARED: shared, ...(forks ? { REGISTRAR_TEST_FORKS: forks } : {}) },
  });
  if (!plan.all) {
    const { run } = fastLoopFiles(REPO);
    return [
      ...statics,
      vitestOn(run, 'only', undefined, 'vitest (shared forks)'),
      vitestOn(run, 'skip', undefined, 'vitest (forks of their own)'),
    ];
  }
  const ownProcesses = vitestOn([], 'skip', '1', 'vitest (forks of their own)');
  // The DynamoDB Local pass runs beside the dynalite pass, in a fork of its own (its files wait
  // on DynamoDB Local's JVM more than on the CPU), its lines marked: run one after the other,
  // the two took 18 minutes of a CI run; side by side they share what the other leaves idle.
  // The few files that need a process of their own run beside the shared forks, one at a time
  // (the longest, lambda-handler-memory, takes about a minute), their lines marked too. Both
  // runs beside take their files shortest first (test/duration-sequencer.ts, orderOf).
  return [
    ...statics,
    {
      title: 'DynamoDB Local suite',
      command: process.execPath,
      args: node('test/dynamodb-local-suite.ts'),
      beside: true,
      prefix: '[dynamodb-local] ',
      env: {
        REGISTRAR_TEST_FORKS: process.env.REGISTRAR_DYNAMODB_LOCAL_FORKS || '1',
        REGISTRAR_TEST_ORDER: 'shortest-first',
      },
    },
    {
      ...ownProcesses,
      beside: true,
      prefix: '[own process] ',
      env: { ...ownProcesses.env, REGISTRAR_TEST_ORDER: 'shortest-first' },
    },
    // Four forks: the integration files wait on timers, agents and sweeps as much as they
    // compute. Two left a core idle a quarter of the time; three ended with three minutes at
    // 50-90% busy once the runs beside had finished (docs/contributing.md, "CI stages").
    // REGISTRAR_TEST_FORKS still sets another count.
    vitestOn([], 'only', process.env.REGISTRAR_TEST_FORKS || '4', 'vitest (shared forks)'),
  ];
}

/** Copies `from` to `to` a whole line at a time, each line after `prefix`. */
export function prefixLines(
  from: NodeJS.ReadableStream,
  to: NodeJS.WritableStream,
  prefix: string,
) {
  let partial = '';
  from.setEncoding('utf8');
  from.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    if (lines.length > 0) to.write(lines.map((line) => `${prefix}${line}\n`).join(''));
  });
  from.on('end', () => {
    if (partial !== '') to.write(`${prefix}${partial}\n`);
  });
}

const running = new Set<ChildProcess>();
let stopping: NodeJS.Signals | undefined;

/** Runs one step in its own process group; resolves with its exit code. */
function run(step: Step): Promise<number> {
  const child = spawn(step.command, step.args, {
    cwd: REPO,
    stdio: step.prefix ? ['inherit', 'pipe', 'pipe'] : 'inherit',
    detached: true,
    ...(step.env ? { env: { ...process.env, ...step.env } } : {}),
  });
  if (step.prefix && child.stdout && child.stderr) {
    prefixLines(child.stdout, process.stdout, step.prefix);
    prefixLines(child.stderr, process.stderr, step.prefix);
  }
  // Before the step starts a child of its own (npm takes a while to), so they all inherit it.
  if (step.nice !== undefined && child.pid !== undefined) {
    try {
      setPriority(child.pid, step.nice);
    } catch {
      // Not permitted or not supported: the step runs at the usual priority.
    }
  }
  const guard = guardProcessGroup(child);
  running.add(child);
  return new Promise((resolve) => {
    child.once('error', (error) => {
      process.stderr.write(`npm test: cannot run ${step.title}: ${error.message}\n`);
      guard.release();
      resolve(1);
    });
    // Piped output is whole only once its streams closed, after the exit.
    child.once(step.prefix ? 'close' : 'exit', (code, signal) => {
      running.delete(child);
      // Whatever the step left in its group (a runtime a test leaked) goes now.
      guard.release();
      resolve(code ?? (signal === 'SIGINT' ? 130 : 1));
    });
  });
}

/**
 * Ctrl-C (or a `kill` of npm or of this script): the running step gets SIGINT, as a terminal
 * sends it, so vitest stops its workers and its fixtures close what they started; what still
 * runs after the grace period is killed with the group.
 */
function stop(signal: NodeJS.Signals): void {
  if (stopping) return;
  stopping = signal;
  if (running.size === 0) process.exit(signal === 'SIGINT' ? 130 : 143);
  const children = [...running];
  for (const child of children) signalGroup(child, 'SIGINT');
  const timer = setTimeout(() => {
    for (const child of children) signalGroup(child, 'SIGKILL');
  }, 10_000);
  timer.unref();
}

async function main(args: readonly string[]): Promise<number> {
  let plan: TestPlan;
  try {
    plan = planOf(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`npm test: ${error.message}\n`);
    return 2;
  }
  if (plan.help) {
    process.stdout.write(HELP);
    return 0;
  }
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGHUP', () => stop('SIGHUP'));
  // `kill -9` of npm leaves this script running under PID 1: it follows npm instead.
  watchParent(() => stop('SIGTERM'), 250);
  const missing = prerequisites(REPO).filter((p) => p.missing !== undefined);
  for (const p of missing) {
    process.stderr.write(
      `npm test: ${p.name}: ${p.missing}; ${process.env.CI === 'true' ? 'CI=true requires it' : p.without}\n`,
    );
  }
  const compileCache = sharedCompileCache();
  // On every way out, a signal's process.exit included.
  process.once('exit', () => compileCache?.remove());
  return runSteps(plan, compileCache?.env ?? {});
}

/**
 * One compile cache (NODE_COMPILE_CACHE) for every process of the run: each test fork, runtime,
 * agent and CLI compiles a module another already compiled from V8's cached code instead of
 * anew (14% less CPU over 40 integration files, warm). A directory of this run's own, made 0700
 * and removed at the end: what it holds is run as code. Not when the caller set
 * NODE_COMPILE_CACHE or turned the cache off (NODE_DISABLE_COMPILE_CACHE=1).
 */
function sharedCompileCache(): { env: Record<string, string>; remove(): void } | undefined {
  if (process.env.NODE_COMPILE_CACHE || process.env.NODE_DISABLE_COMPILE_CACHE === '1') return;
  const dir = mkdtempSync(join(tmpdir(), 'registrar-compile-cache-'));
  return {
    env: { NODE_COMPILE_CACHE: dir },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function runSteps(plan: TestPlan, env: Record<string, string>): Promise<number> {
  const beside: { step: Step; done: Promise<number> }[] = [];
  const failed: { step: Step; code: number }[] = [];
  for (const planned of steps(plan)) {
    const step = { ...planned, env: { ...env, ...planned.env } };
    if (stopping) break;
    if (step.beside) {
      beside.push({ step, done: run(step) });
      continue;
    }
    const code = await run(step);
    if (stopping) break;
    if (code !== 0) {
      failed.push({ step, code });
      break;
    }
  }
  for (const { step, done } of beside) {
    const code = await done;
    if (code !== 0 && !stopping) failed.push({ step, code });
  }
  if (stopping) return stopping === 'SIGINT' ? 130 : 143;
  for (const { step, code } of failed) {
    process.stderr.write(`npm test: ${step.title} failed (exit ${code})\n`);
  }
  if (failed.length > 0) return failed[0]?.code ?? 1;
  if (!plan.all && !plan.vitestOnly) {
    const { skipped } = fastLoopFiles(REPO);
    process.stdout.write(
      `npm test: the fast loop skipped ${skipped} integration and property files and the DynamoDB Local pass; npm test -- --all runs everything (CI does)\n`,
    );
  }
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
