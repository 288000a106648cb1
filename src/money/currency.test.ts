import { describe, expect, it } from 'vitest';
import { DomainError } from '../errors/codes';
import { currencyExponent, decimalToMinor, formatMinor, isKnownCurrency, minorToDecimal } from './currency';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainError) return e.code;
    throw e;
  }
  return undefined;
}

describe('isKnownCurrency', () => {
  it('accepts ISO codes the runtime knows', () => {
    expect(isKnownCurrency('EUR')).toBe(true);
    expect(isKnownCurrency('JPY')).toBe(true);
    expect(isKnownCurrency('BHD')).toBe(true);
  });

  it('refuses lowercase, wrong length and invented codes', () => {
    expect(isKnownCurrency('eur')).toBe(false);
    expect(isKnownCurrency('EURO')).toBe(false);
    expect(isKnownCurrency('EU')).toBe(false);
    expect(isKnownCurrency('ZZZ')).toBe(false);
    expect(isKnownCurrency(' EUR')).toBe(false);
  });
});

describe('currencyExponent', () => {
  it('reads minor-unit digits from Intl', () => {
    expect(currencyExponent('EUR')).toBe(2);
    expect(currencyExponent('USD')).toBe(2);
    expect(currencyExponent('JPY')).toBe(0);
    expect(currencyExponent('BHD')).toBe(3);
    expect(currencyExponent('KWD')).toBe(3);
    // second call is served from the cache and must agree
    expect(currencyExponent('BHD')).toBe(3);
  });

  it('throws CURRENCY_NOT_ALLOWED for unknown codes', () => {
    expect(codeOf(() => currencyExponent('ZZZ'))).toBe('CURRENCY_NOT_ALLOWED');
    expect(codeOf(() => currencyExponent('eur'))).toBe('CURRENCY_NOT_ALLOWED');
  });
});

describe('decimalToMinor', () => {
  it('converts ordinary decimals exactly', () => {
    expect(decimalToMinor(12.34, 2)).toBe(1234);
    expect(decimalToMinor(10, 2)).toBe(1000);
    expect(decimalToMinor(0, 2)).toBe(0);
    expect(decimalToMinor(0.01, 2)).toBe(1);
    expect(decimalToMinor(1.1, 2)).toBe(110);
    expect(decimalToMinor(1.234, 3)).toBe(1234);
    expect(decimalToMinor(0.001, 3)).toBe(1);
  });

  it('is not fooled by values that multiply badly as floats', () => {
    // 0.3 * 100 === 30.000000000000004, 1.1 * 100 === 110.00000000000001, 4.35 * 100 === 434.99999999999994
    expect(decimalToMinor(0.3, 2)).toBe(30);
    expect(decimalToMinor(4.35, 2)).toBe(435);
    expect(decimalToMinor(1.15, 2)).toBe(115);
    expect(decimalToMinor(JSON.parse('0.3') as number, 2)).toBe(30);
  });

  it('refuses a sum that already carries float noise', () => {
    // 0.1 + 0.2 is 0.30000000000000004, which really has 17 decimals
    expect(codeOf(() => decimalToMinor(0.1 + 0.2, 2))).toBe('STAKE_PRECISION');
  });

  it('rejects more decimals than the currency allows', () => {
    expect(codeOf(() => decimalToMinor(1.005, 2))).toBe('STAKE_PRECISION');
    expect(codeOf(() => decimalToMinor(1e-7, 2))).toBe('STAKE_PRECISION');
    expect(codeOf(() => decimalToMinor(1.5, 0))).toBe('STAKE_PRECISION');
    expect(codeOf(() => decimalToMinor(0.0001, 3))).toBe('STAKE_PRECISION');
  });

  it('handles whole-unit currencies', () => {
    expect(decimalToMinor(100, currencyExponent('JPY'))).toBe(100);
    expect(decimalToMinor(1e15, 0)).toBe(1e15);
  });

  it('handles exponent notation from Number::toString', () => {
    expect(String(1e-7)).toBe('1e-7');
    expect(decimalToMinor(1e-7, 7)).toBe(1);
    expect(decimalToMinor(1.5e-7, 8)).toBe(15);
    expect(decimalToMinor(1e-7, 9)).toBe(100);
    // 1e21 and above print as "1e+21"; in minor units they are beyond the safe range
    expect(codeOf(() => decimalToMinor(1e21, 0))).toBe('VALIDATION_FAILED');
  });

  it('accepts the largest safe amount and refuses one step beyond it', () => {
    expect(decimalToMinor(9007199254740991, 0)).toBe(Number.MAX_SAFE_INTEGER);
    expect(decimalToMinor(90071992547409.9, 2)).toBe(9007199254740990);
    expect(codeOf(() => decimalToMinor(90071992547409.93, 3))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => decimalToMinor(9007199254740992, 0))).toBe('VALIDATION_FAILED');
  });

  it('refuses negative, non-finite and non-number input', () => {
    expect(codeOf(() => decimalToMinor(-1, 2))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => decimalToMinor(Number.NaN, 2))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => decimalToMinor(Number.POSITIVE_INFINITY, 2))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => decimalToMinor('1.00' as unknown as number, 2))).toBe('VALIDATION_FAILED');
  });

  it('treats negative zero as zero', () => {
    expect(decimalToMinor(-0, 2)).toBe(0);
  });
});

describe('minorToDecimal and formatMinor', () => {
  it('formats with the exponent', () => {
    expect(formatMinor(1234, 2)).toBe('12.34');
    expect(formatMinor(5, 2)).toBe('0.05');
    expect(formatMinor(-5, 2)).toBe('-0.05');
    expect(formatMinor(100, 0)).toBe('100');
    expect(formatMinor(1, 3)).toBe('0.001');
    expect(formatMinor(0, 2)).toBe('0.00');
    expect(formatMinor(123456789012345678901n, 2)).toBe('1234567890123456789.01');
  });

  it('builds JSON numbers without float arithmetic', () => {
    expect(minorToDecimal(1234, 2)).toBe(12.34);
    expect(minorToDecimal(30, 2)).toBe(0.3);
    expect(minorToDecimal(435, 2)).toBe(4.35);
    expect(minorToDecimal(100, 0)).toBe(100);
    expect(minorToDecimal(1, 3)).toBe(0.001);
    expect(minorToDecimal(-5, 2)).toBe(-0.05);
    expect(Object.is(minorToDecimal(-0, 2), 0)).toBe(true);
    expect(JSON.stringify({ payout: minorToDecimal(253586, 2) })).toBe('{"payout":2535.86}');
  });

  it('round-trips through JSON for every amount below 10^15', () => {
    const samples = [0, 1, 9, 10, 99, 101, 1001, 123456, 2535, 999999999999999, 100000000000001];
    for (const exponent of [0, 2, 3]) {
      for (const m of samples) {
        const wire = JSON.parse(JSON.stringify(minorToDecimal(m, exponent))) as number;
        expect(decimalToMinor(wire, exponent)).toBe(m);
      }
    }
    // deterministic sweep over every width of amount
    let m = 7;
    while (m < 1e15) {
      expect(decimalToMinor(minorToDecimal(m, 2), 2)).toBe(m);
      m = m * 3 + 1;
    }
  });

  it('refuses amounts a double cannot carry exactly instead of changing them', () => {
    expect(codeOf(() => minorToDecimal(Number.MAX_SAFE_INTEGER, 2))).toBe('VALIDATION_FAILED');
    expect(minorToDecimal(Number.MAX_SAFE_INTEGER, 0)).toBe(Number.MAX_SAFE_INTEGER);
  });
});
