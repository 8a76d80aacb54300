import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fastLoopFiles, planOf, prefixLines, steps, UsageError } from '../../scripts/test.ts';

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
  it('runs the DynamoDB Local pass beside the dynalite pass, in one fork, its lines marked', () => {
    const chain = steps(planOf(['--all']));
    expect(chain.map((step) => [step.title, step.beside === true])).toEqual([
      ['type-check', true],
      ['lint', true],
      ['DynamoDB Local suite', true],
      ['vitest (shared forks)', false],
      ['vitest', false],
    ]);
    const local = chain[2];
    expect(local?.prefix).toBe('[dynamodb-local] ');
    expect(local?.env?.REGISTRAR_TEST_FORKS).toBe('1');
  });

  it('runs the files that may share forks first, then every other file in a fork of its own', () => {
    for (const chain of [steps(planOf([])), steps(planOf(['--all']))]) {
      const [shared, own] = chain.filter((step) => !step.beside);
      expect(shared?.env).toEqual({ REGISTRAR_TEST_SHARED: 'only' });
      expect(own?.env?.REGISTRAR_TEST_SHARED).toBe('skip');
    }
    // The whole chain gives the files in forks of their own three forks; the fast loop, two.
    const own = (args: string[]) => steps(planOf(args)).filter((step) => !step.beside)[1];
    if (process.env.REGISTRAR_TEST_FORKS === undefined) {
      expect(own(['--all'])?.env?.REGISTRAR_TEST_FORKS).toBe('3');
    }
    expect(own([])?.env?.REGISTRAR_TEST_FORKS).toBeUndefined();
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
