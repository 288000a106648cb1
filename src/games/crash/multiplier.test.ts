import { describe, expect, it } from 'vitest';
import {
  crashElapsedMs,
  elapsedForMultiplier,
  formatMultiplier,
  multiplierAt,
  parseMultiplier,
  payoutFor,
} from './multiplier';

describe('multiplierAt', () => {
  it('starts at 1.00x and follows floor(100 * e^(0.00006 t))', () => {
    expect(multiplierAt(0)).toBe(100);
    expect(multiplierAt(165)).toBe(100);
    expect(multiplierAt(166)).toBe(101);
    expect(multiplierAt(1000)).toBe(106); // 106.18...
    expect(multiplierAt(11_552)).toBe(199);
    expect(multiplierAt(11_553)).toBe(200);
    expect(multiplierAt(60_000)).toBe(3659); // e^3.6 = 36.598...
  });

  it('never decreases over the first five minutes', () => {
    let previous = multiplierAt(0);
    for (let ms = 1; ms <= 300_000; ms++) {
      const current = multiplierAt(ms);
      expect(current >= previous).toBe(true);
      previous = current;
    }
  });

  it('rejects negative or non-finite times', () => {
    expect(() => multiplierAt(-1)).toThrow(RangeError);
    expect(() => multiplierAt(Number.NaN)).toThrow(RangeError);
    expect(() => multiplierAt(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});

describe('elapsedForMultiplier', () => {
  it.each([
    [101, 166],
    [110, 1589],
    [150, 6758],
    [200, 11_553],
    [250, 15_272],
    [1000, 38_377],
    [10_000, 76_753],
    [100_000, 115_130],
    [1_000_000, 153_506],
  ])('reaches %i hundredths first at %i ms', (hundredths, ms) => {
    expect(elapsedForMultiplier(hundredths)).toBe(ms);
    expect(multiplierAt(ms)).toBeGreaterThanOrEqual(hundredths);
    expect(multiplierAt(ms - 1)).toBeLessThan(hundredths);
  });

  it('is the exact inverse of multiplierAt for every target up to 200.00x', () => {
    for (let h = 101; h <= 20_000; h++) {
      const ms = elapsedForMultiplier(h);
      if (multiplierAt(ms) < h || multiplierAt(ms - 1) >= h) {
        throw new Error(`boundary wrong for ${h}: ${ms} ms`);
      }
    }
  });

  it('skips multipliers the curve jumps over at high values', () => {
    // Above ~1666x one millisecond moves the curve by more than 0.01x, so some values are never shown;
    // the round still reaches them at the first millisecond it is at or past them.
    const ms = elapsedForMultiplier(100_001);
    expect(multiplierAt(ms - 1)).toBe(99_998);
    expect(multiplierAt(ms)).toBe(100_004);
  });

  it('treats 1.00x and below as the start of the round', () => {
    expect(elapsedForMultiplier(100)).toBe(0);
    expect(elapsedForMultiplier(1)).toBe(0);
    expect(crashElapsedMs(100)).toBe(0);
    expect(crashElapsedMs(200)).toBe(11_553);
    expect(() => elapsedForMultiplier(1.5)).toThrow(RangeError);
  });
});

describe('payoutFor', () => {
  it('floors amount * multiplier / 100', () => {
    expect(payoutFor(100, 250)).toBe(250);
    expect(payoutFor(99, 101)).toBe(99); // 99.99
    expect(payoutFor(1, 199)).toBe(1);
    expect(payoutFor(0, 5000)).toBe(0);
    expect(payoutFor(12_345, 100)).toBe(12_345);
  });

  it('stays exact where the product no longer fits in a double', () => {
    // 9007199254740991 * 199 / 100 = 17924326516934572.09: too large for a double, fine for BigInt.
    expect(() => payoutFor(Number.MAX_SAFE_INTEGER, 199)).toThrow(RangeError);
    // 4503599627370495 * 199 = 896216325846728505 needs BigInt; the floor is still a safe integer.
    expect(payoutFor(4_503_599_627_370_495, 199)).toBe(8_962_163_258_467_285);
    // 900719925474099 * 999 = 899819205548624901; as a double it would lose the trailing 01.
    expect(payoutFor(900_719_925_474_099, 999)).toBe(8_998_192_055_486_249);
  });

  it('rejects fractional or negative inputs', () => {
    expect(() => payoutFor(1.5, 200)).toThrow(RangeError);
    expect(() => payoutFor(-1, 200)).toThrow(RangeError);
    expect(() => payoutFor(100, 150.5)).toThrow(RangeError);
  });
});

describe('formatMultiplier / parseMultiplier', () => {
  it('formats hundredths as the two-decimal JSON number', () => {
    expect(formatMultiplier(250)).toBe(2.5);
    expect(formatMultiplier(101)).toBe(1.01);
    expect(formatMultiplier(100)).toBe(1);
    expect(JSON.stringify(formatMultiplier(341_872))).toBe('3418.72');
  });

  it('parses numbers with at most two decimals', () => {
    expect(parseMultiplier(2.5)).toBe(250);
    expect(parseMultiplier(1.01)).toBe(101);
    expect(parseMultiplier(1.1)).toBe(110); // 1.1 * 100 = 110.00000000000001 in binary
    expect(parseMultiplier(2.05)).toBe(205); // 2.05 * 100 = 204.99999999999997 in binary
    expect(parseMultiplier(100)).toBe(10_000);
    expect(parseMultiplier(0)).toBe(0);
  });

  it('rejects extra decimals, float noise and values out of range', () => {
    expect(parseMultiplier(1.005)).toBeNull();
    expect(parseMultiplier(0.1 + 0.2)).toBeNull();
    expect(parseMultiplier(1e-7)).toBeNull();
    expect(parseMultiplier(1e21)).toBeNull();
    expect(parseMultiplier(1e15)).toBeNull(); // 1e17 hundredths is beyond the safe integers
    expect(parseMultiplier(-2)).toBeNull();
    expect(parseMultiplier(Number.NaN)).toBeNull();
    expect(parseMultiplier(Number.POSITIVE_INFINITY)).toBeNull();
  });

  it('round-trips every multiplier from 1.00x to 1000.00x', () => {
    for (let h = 100; h <= 100_000; h++) {
      if (parseMultiplier(formatMultiplier(h)) !== h) throw new Error(`round trip failed at ${h}`);
    }
  });
});
