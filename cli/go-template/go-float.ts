/**
 * Floating-point numbers as Go's fmt writes them (`%e`, `%f`, `%g`, and `%v` which is the
 * shortest `%g`): exponents of at least two digits (`1e+06`), rounding of the exact binary
 * value to nearest with exact halves to even (`%.0f` of 2.5 is 2), as strconv does.
 */

/** A non-negative number as decimal digits (no leading or trailing zeros) and the point's place. */
interface Decimal {
  digits: string;
  /** The value is 0.`digits` x 10^dp. */
  dp: number;
}

function trimmed(digits: string, dp: number): Decimal {
  const trailing = digits.replace(/0+$/, '');
  const leading = trailing.length - trailing.replace(/^0+/, '').length;
  if (trailing.length === leading) return { digits: '', dp: 0 };
  return { digits: trailing.slice(leading), dp: dp - leading };
}

/** Every digit of a finite double, exactly (a double is a whole number over a power of two). */
function exact(x: number): Decimal {
  if (x === 0) return { digits: '', dp: 0 };
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const exponent = (biased === 0 ? 1 : biased) - 1075;
  if (exponent >= 0) {
    const digits = (mantissa << BigInt(exponent)).toString();
    return trimmed(digits, digits.length);
  }
  // m / 2^k = m x 5^k / 10^k
  const digits = (mantissa * 5n ** BigInt(-exponent)).toString();
  return trimmed(digits, digits.length + exponent);
}

/** The shortest digits that read back as `x` (JavaScript's and Go's shortest agree). */
function shortest(x: number): Decimal {
  const [mantissa = '', exponent = '0'] = x.toExponential().split('e');
  return trimmed(mantissa.replace('.', ''), Number(exponent) + 1);
}

/** Rounded to `count` significant digits, exact halves to even. */
function round(decimal: Decimal, count: number): Decimal {
  const { digits, dp } = decimal;
  if (digits.length <= count) return decimal;
  if (count < 0) return { digits: '', dp: 0 };
  const kept = digits.slice(0, count);
  const rest = digits.slice(count);
  const half = rest === '5';
  const up = half
    ? count > 0 && Number(kept.at(-1)) % 2 === 1
    : rest[0] !== undefined && rest[0] >= '5';
  if (!up) return trimmed(kept, dp);
  const raised = (BigInt(kept || '0') + 1n).toString().padStart(count, '0');
  return raised.length > count ? trimmed(raised, dp + 1) : trimmed(raised, dp);
}

function digitAt(decimal: Decimal, i: number): string {
  return decimal.digits[i] ?? '0';
}

function formatE(decimal: Decimal, precision: number, e: string): string {
  const exponent = decimal.digits === '' ? 0 : decimal.dp - 1;
  let text = digitAt(decimal, 0);
  if (precision > 0) {
    text += '.';
    for (let i = 1; i <= precision; i++) text += digitAt(decimal, i);
  }
  const sign = exponent < 0 ? '-' : '+';
  return `${text}${e}${sign}${String(Math.abs(exponent)).padStart(2, '0')}`;
}

function formatF(decimal: Decimal, precision: number): string {
  let text = '';
  if (decimal.dp <= 0) text = '0';
  for (let i = 0; i < decimal.dp; i++) text += digitAt(decimal, i);
  if (precision > 0) {
    text += '.';
    for (let i = 0; i < precision; i++) text += digitAt(decimal, decimal.dp + i);
  }
  return text;
}

/**
 * `x` (finite, not negative) with verb e, E, f, F, g or G and a precision (undefined: 6 for e
 * and f, the shortest exact digits for g).
 */
export function formatFloat(x: number, verb: string, precision: number | undefined): string {
  const e = verb === 'E' || verb === 'G' ? 'E' : 'e';
  if (verb === 'e' || verb === 'E') {
    const digits = precision ?? 6;
    return formatE(round(exact(x), digits + 1), digits, e);
  }
  if (verb === 'f' || verb === 'F') {
    const digits = precision ?? 6;
    const decimal = exact(x);
    return formatF(round(decimal, decimal.dp + digits), digits);
  }
  const isShortest = precision === undefined;
  const decimal = isShortest ? shortest(x) : round(exact(x), Math.max(precision, 1));
  let wanted = isShortest ? decimal.digits.length : Math.max(precision, 1);
  const count = decimal.digits.length;
  let limit = wanted;
  if (limit > count && count >= decimal.dp) limit = count;
  // The shortest form switches to an exponent from 1e+06 on, as Go's %v does.
  if (isShortest) limit = 6;
  const exponent = decimal.dp - 1;
  if (decimal.digits !== '' && (exponent < -4 || exponent >= limit)) {
    return formatE(decimal, Math.min(wanted, Math.max(count, 1)) - 1, e);
  }
  if (wanted > decimal.dp) wanted = count;
  return formatF(decimal, Math.max(wanted - decimal.dp, 0));
}
