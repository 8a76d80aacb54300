import { describe, expect, it } from 'vitest';
import { describeError, seconds } from '../../agent/supervisor.ts';

describe("the agent's log words", () => {
  it.each([
    [0, '0 ms'],
    [37, '37 ms'],
    [999.6, '1000 ms'],
    [1_000, '1.0 s'],
    [2_540, '2.5 s'],
  ])('says a delay of %d ms as %s, never "0.0 s"', (ms, text) => {
    expect(seconds(ms)).toBe(text);
  });

  it('names a connection error code once', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8080'), {
      code: 'ECONNREFUSED',
    });
    expect(describeError(refused)).toBe('connect ECONNREFUSED 127.0.0.1:8080');
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    expect(describeError(reset)).toBe('ECONNRESET socket hang up');
  });
});
