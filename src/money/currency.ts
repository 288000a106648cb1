/**
 * Currency facts and exact conversions between JSON decimals and integer minor units.
 *
 * Amounts arrive over JSON as numbers that JSON.parse has already turned into doubles. A double is
 * not a decimal, but its shortest round-trip string (`String(value)`, ECMA-262 Number::toString) is
 * the decimal the sender most plausibly wrote, and it is what any other JSON reader would print.
 * All conversions therefore go through that string and integer (bigint) arithmetic; floats are never
 * multiplied or divided, so 0.3 EUR is exactly 30 cents and never 29.999999999999996.
 */
import { DomainError } from '../errors/codes';

const CURRENCY_CODE = /^[A-Z]{3}$/;

// Built once: Intl's list cannot change while the process runs.
let knownCurrencies: ReadonlySet<string> | undefined;
const exponentCache = new Map<string, number>();

/** True for an uppercase three-letter ISO 4217 code that this runtime's ICU data knows. */
export function isKnownCurrency(code: string): boolean {
  if (typeof code !== 'string' || !CURRENCY_CODE.test(code)) return false;
  knownCurrencies ??= new Set(Intl.supportedValuesOf('currency'));
  return knownCurrencies.has(code);
}

/**
 * Minor-unit digits of a currency (EUR 2, JPY 0, BHD 3), taken from the runtime's ICU/CLDR data
 * rather than a hand-kept table so it follows upstream updates. CLDR deliberately differs from the
 * ISO 4217 list for a few currencies whose minor unit is not used in practice (HUF and IDR are 0 in
 * CLDR, 2 in ISO); stakes in those currencies are whole units.
 */
export function currencyExponent(code: string): number {
  const cached = exponentCache.get(code);
  if (cached !== undefined) return cached;
  if (!isKnownCurrency(code)) {
    throw new DomainError('CURRENCY_NOT_ALLOWED', `unknown currency code: ${String(code)}`, {
      currency: code,
    });
  }
  const digits = new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions()
    .maximumFractionDigits;
  if (digits === undefined || !Number.isSafeInteger(digits) || digits < 0) {
    throw new DomainError('INTERNAL', `runtime reports no minor-unit digits for ${code}`);
  }
  exponentCache.set(code, digits);
  return digits;
}

function assertExponent(exponent: number): void {
  // ISO 4217 uses 0..4; 18 leaves room for token-like units while keeping strings short.
  if (!Number.isInteger(exponent) || exponent < 0 || exponent > 18) {
    throw new DomainError('INTERNAL', `invalid currency exponent: ${exponent}`);
  }
}

interface DecimalParts {
  /** All significant digits, no sign, no point. */
  digits: string;
  /** Position of the decimal point within `digits` (may be negative or beyond its length). */
  point: number;
}

// Number::toString only ever produces these shapes for finite non-negative values:
// "123", "12.34", "0.000001", "1e+21", "1.5e-7".
const NUMBER_STRING = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/;

function decimalPartsOf(value: number): DecimalParts {
  const text = String(value);
  const m = NUMBER_STRING.exec(text);
  if (!m) throw new DomainError('INTERNAL', `unexpected number form: ${text}`);
  const intPart = m[1] ?? '';
  const fracPart = m[2] ?? '';
  const exp = m[3] === undefined ? 0 : Number(m[3]);
  let digits = intPart + fracPart;
  const point = intPart.length + exp;
  // Trailing zeros after the point carry no value; without this "1.50"-like forms would count 2 decimals.
  while (digits.length > Math.max(point, 0) && digits.endsWith('0')) digits = digits.slice(0, -1);
  return { digits, point };
}

/**
 * Converts a JSON decimal to integer minor units exactly.
 * `STAKE_PRECISION` when the value has more decimals than the currency allows (1.005 EUR);
 * `VALIDATION_FAILED` when it is not a finite non-negative number or exceeds the safe integer range.
 */
export function decimalToMinor(value: number, exponent: number): number {
  assertExponent(exponent);
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new DomainError('VALIDATION_FAILED', 'amount must be a finite number', { value });
  }
  if (value < 0) {
    throw new DomainError('VALIDATION_FAILED', 'amount must not be negative', { value });
  }
  const { digits, point } = decimalPartsOf(value);
  const decimals = Math.max(digits.length - point, 0);
  if (decimals > exponent) {
    throw new DomainError('STAKE_PRECISION', `amount has ${decimals} decimal places; the currency allows ${exponent}`, {
      value,
      max_decimals: exponent,
    });
  }
  // decimals <= exponent guarantees point + exponent >= digits.length, so this only appends zeros.
  const minor = BigInt(digits + '0'.repeat(point + exponent - digits.length));
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new DomainError('VALIDATION_FAILED', 'amount is too large', { value });
  }
  return Number(minor);
}

/**
 * A finite non-negative JSON decimal in whole minor units, rounded down where it has more decimals
 * than the currency (377.84999999999997 EUR → 37784): the exact floor of the decimal the double
 * prints, as a bigint (it may pass 2^53), never a float product (377.84999999999997 × 100 is 37785
 * in a double). For limits and caps, where "at most" must hold to the minor unit.
 */
export function decimalToMinorFloor(value: number, exponent: number): bigint {
  assertExponent(exponent);
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new DomainError('VALIDATION_FAILED', 'amount must be a finite non-negative number', { value });
  }
  const { digits, point } = decimalPartsOf(value);
  const whole = point + exponent;
  if (whole <= 0) return 0n;
  if (whole >= digits.length) return BigInt(digits + '0'.repeat(whole - digits.length));
  return BigInt(digits.slice(0, whole));
}

/** "12.34" for (1234, 2), "-0.05" for (-5, 2), "100" for (100, 0). Exact for any integer. */
export function formatMinor(minor: number | bigint, exponent: number): string {
  assertExponent(exponent);
  if (typeof minor === 'number' && !Number.isSafeInteger(minor)) {
    throw new DomainError('INTERNAL', `minor amount is not a safe integer: ${minor}`);
  }
  const big = BigInt(minor);
  const negative = big < 0n;
  const abs = (negative ? -big : big).toString();
  const sign = negative ? '-' : '';
  if (exponent === 0) return sign + abs;
  const padded = abs.padStart(exponent + 1, '0');
  return `${sign}${padded.slice(0, -exponent)}.${padded.slice(-exponent)}`;
}

/**
 * Minor units back to a JSON number (1234, 2 -> 12.34). Any decimal with at most 15 significant
 * digits survives the trip through a double, so every |minor| < 10^15 is exact; larger values are
 * checked and refused when the double would print a different decimal (9007199254740991 cents
 * would come back as 90071992547409.9), because a payout must never silently change.
 */
export function minorToDecimal(minor: number, exponent: number): number {
  const text = formatMinor(minor, exponent);
  const result = Number(text);
  if (exponent > 0 && Math.abs(minor) >= 1e15 && !roundTrips(result, minor, exponent)) {
    throw new DomainError('VALIDATION_FAILED', `amount ${text} cannot be represented exactly as a JSON number`);
  }
  // Normalises -0 (from minor = -0) so JSON never carries a signed zero.
  return result === 0 ? 0 : result;
}

function roundTrips(value: number, minor: number, exponent: number): boolean {
  try {
    const back = value < 0 ? -decimalToMinor(-value, exponent) : decimalToMinor(value, exponent);
    return back === minor;
  } catch {
    return false;
  }
}

/** Money as a bet's surface shows it: "12.50 EUR" with a currency, plain units without one, "–" for none. */
export function money(holder: { currency: string | null }, minor: number | null): string {
  if (minor === null) return '–';
  if (!holder.currency) return String(minor);
  return `${formatMinor(minor, currencyExponent(holder.currency))} ${holder.currency}`;
}
