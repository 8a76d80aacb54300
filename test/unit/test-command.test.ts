import { describe, expect, it } from 'vitest';
import { planOf, UsageError } from '../../scripts/test.ts';

/** `npm test -- <args>`: what reaches vitest, and what does not run at all. */
describe('npm test arguments', () => {
  it('runs the whole chain with no argument', () => {
    expect(planOf([])).toEqual({ help: false, vitestOnly: undefined });
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
