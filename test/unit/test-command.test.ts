import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  BATCH_NICE,
  fastLoopFiles,
  planOf,
  prefixLines,
  steps,
  UsageError,
} from '../../scripts/test.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `npm test -- <args>`: what reaches vitest, and what does not run at all. */
describe('npm test arguments', () => {
  it('runs the fast loop with no argument, and the whole chain with --all', () => {
    expect(planOf([])).toEqual({ help: false, vitestOnly: undefined, all: false });
    expect(planOf(['--all'])).toEqual({ help: false, vitestOnly: undefined, all: true });
  });

  it('refuses --all with a filter: --all means every test', () => {
    expect(() => planOf(['--all', 'sweep'])).toThrow('--all runs every test');
  });

  it('runs unit, infrastructure and store contract tests in the fast loop, and counts the rest', () => {
    const { run, skipped } = fastLoopFiles(REPO);
    expect(run.slice(0, 2)).toEqual(['test/unit', 'test/infra']);
    expect(run).toContain('test/integration/dynamodb-registry-store.test.ts');
    expect(run).toContain('test/integration/entry-events-store.test.ts');
    expect(run).not.toContain('test/integration/lifecycle-story.test.ts');
    expect(skipped).toBeGreaterThan(100);
  });

  it('prints help for --help and -h, wherever they stand, and runs nothing', () => {
    expect(planOf(['--help']).help).toBe(true);
    expect(planOf(['sweep', '-h']).help).toBe(true);
  });

  it('hands file filters to vitest alone', () => {
    expect(planOf(['sweep', 'test/unit/entry-name.test.ts']).vitestOnly).toEqual([
      'sweep',
      'test/unit/entry-name.test.ts',
    ]);
  });

  it('hands a test name to vitest as -t', () => {
    expect(planOf(['-t', 'late disconnect']).vitestOnly).toEqual(['-t', 'late disconnect']);
    expect(planOf(['--test-name=late']).vitestOnly).toEqual(['-t', 'late']);
  });

  it("passes what follows a second '--' to vitest as is, --help included", () => {
    expect(planOf(['sweep', '--', '--reporter=verbose', '--help'])).toEqual({
      help: false,
      vitestOnly: ['sweep', '--reporter=verbose', '--help'],
      all: false,
    });
  });

  it('refuses an unknown option, naming it', () => {
    expect(() => planOf(['--bail'])).toThrow(UsageError);
    expect(() => planOf(['--bail'])).toThrow("unknown option '--bail'");
  });

  it('refuses -t without a pattern', () => {
    expect(() => planOf(['-t'])).toThrow('-t needs a pattern');
  });
});

describe('npm test -- --all', () => {
  it('runs the DynamoDB Local pass and the files of their own beside the shared forks, lines marked', () => {
    // The static checks yield the CPU to the tests; no test step is niced.
    for (const step of steps(planOf(['--all']))) {
      expect([step.title, step.nice]).toEqual([
        step.title,
        ['type-check', 'lint'].includes(step.title) ? BATCH_NICE : undefined,
      ]);
    }
    const chain = steps(planOf(['--all']));
    expect(chain.map((step) => [step.title, step.beside === true, step.prefix])).toEqual([
      ['type-check', true, undefined],
      ['lint', true, undefined],
      ['DynamoDB Local suite', true, '[dynamodb-local] '],
      ['vitest (forks of their own)', true, '[own process] '],
      ['vitest (shared forks)', false, undefined],
    ]);
    expect(chain[2]?.env?.REGISTRAR_TEST_ORDER).toBe('shortest-first');
    if (process.env.REGISTRAR_DYNAMODB_LOCAL_FORKS === undefined) {
      expect(chain[2]?.env?.REGISTRAR_TEST_FORKS).toBe('1');
    }
    expect(chain[3]?.env).toEqual({
      REGISTRAR_TEST_SHARED: 'skip',
      REGISTRAR_TEST_FORKS: '1',
      REGISTRAR_TEST_ORDER: 'shortest-first',
    });
    if (process.env.REGISTRAR_TEST_FORKS === undefined) {
      expect(chain[4]?.env).toEqual({ REGISTRAR_TEST_SHARED: 'only', REGISTRAR_TEST_FORKS: '4' });
    }
  });

  it("runs the fast loop's files that may share forks first, then the rest in forks of their own", () => {
    const [shared, own] = steps(planOf([])).filter((step) => !step.beside);
    // Two forks each (vitest.config.ts), or what REGISTRAR_TEST_FORKS says.
    expect(shared?.env).toEqual({ REGISTRAR_TEST_SHARED: 'only' });
    expect(own?.env).toEqual({ REGISTRAR_TEST_SHARED: 'skip' });
    // Both on the fast loop's files only: a store contract file, not a runtime's.
    for (const step of [shared, own]) {
      expect(step?.args).toContain('test/unit');
      expect(step?.args).toContain('test/integration/dynamodb-token-store.test.ts');
      expect(step?.args).not.toContain('test/integration/local-runtime.test.ts');
      expect(step?.args).toContain('--passWithNoTests');
    }
    // vitest alone (a filter) keeps every file in a fork of its own.
    expect(steps(planOf(['sweep']))[0]?.env).toBeUndefined();
  });

  it('marks whole lines only, however the output arrives in pieces', async () => {
    const from = new PassThrough();
    const to = new PassThrough();
    let out = '';
    to.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    prefixLines(from, to, '[x] ');
    from.write('one\ntw');
    from.write('o\n\nthr');
    from.end('ee');
    await new Promise((resolve) => from.on('end', resolve));
    expect(out).toBe('[x] one\n[x] two\n[x] \n[x] three\n');
  });
});
