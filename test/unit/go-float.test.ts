import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatFloat } from '../../cli/go-template/go-float.ts';

/** Go's float formatting (strconv) for printf's %e, %f, %g and %v in -o go-template. */
describe('formatFloat', () => {
  const finite = fc.double({ min: 0, noNaN: true, noDefaultInfinity: true });

  it('writes 17 significant digits that read back as the same number', () => {
    fc.assert(fc.property(finite, (x) => Number(formatFloat(x, 'e', 16)) === x));
  });

  it("writes %v's shortest form so that it reads back as the same number", () => {
    fc.assert(fc.property(finite, (x) => Number(formatFloat(x, 'g', undefined)) === x));
  });

  it('rounds %f as JavaScript does where the value is not exactly halfway', () => {
    // Below 1e7 with up to 8 decimals, x * 10^digits * 2 stays under 2^53: an exact half
    // (where Go rounds to even and toFixed up) always shows as a whole number there.
    const notHalfway = fc
      .tuple(fc.double({ min: 0, max: 1e7, noNaN: true }), fc.integer({ min: 0, max: 8 }))
      .filter(
        ([x, digits]) =>
          !Number.isInteger(x * 10 ** digits * 2) || Number.isInteger(x * 10 ** digits),
      );
    fc.assert(
      fc.property(notHalfway, ([x, digits]) => formatFloat(x, 'f', digits) === x.toFixed(digits)),
      { numRuns: 2000 },
    );
  });

  it('rounds an exact half to even, as Go, where toFixed rounds it up', () => {
    // The double nearest 283788732102671.6 is 283788732102671.625 exactly.
    expect(formatFloat(283788732102671.6, 'f', 2)).toBe('283788732102671.62');
    expect((283788732102671.6).toFixed(2)).toBe('283788732102671.63');
  });

  it.each([
    [2.5, 'f', 0, '2'],
    [3.5, 'f', 0, '4'],
    [0.125, 'f', 2, '0.12'],
    [0.375, 'f', 2, '0.38'],
    [9.96, 'f', 1, '10.0'],
    [1e6, 'g', undefined, '1e+06'],
    [123456, 'g', undefined, '123456'],
    [0.0001, 'g', undefined, '0.0001'],
    [0.00001, 'g', undefined, '1e-05'],
    [1e100, 'e', 2, '1.00e+100'],
    [0, 'e', 3, '0.000e+00'],
    [5e-324, 'g', undefined, '5e-324'],
    [100, 'g', 2, '1e+02'],
    [123.456, 'g', 10, '123.456'],
  ] as const)('formats %d with %s and precision %j as Go: %j', (x, verb, precision, expected) => {
    expect(formatFloat(x, verb, precision)).toBe(expected);
  });
});
