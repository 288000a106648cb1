/**
 * The Crash growth curve and multiplier arithmetic. Multipliers are integers in hundredths
 * (250 = 2.50x) everywhere inside the service; decimals exist only at the JSON boundary.
 */

/** Growth rate per millisecond: the curve doubles roughly every 11.55 s. */
export const GROWTH_PER_MS = 0.00006;

const ONE_X = 100;

/** Multiplier in hundredths reached `elapsedMs` after the round started running. */
export function multiplierAt(elapsedMs: number): number {
  if (!Number.isFinite(elapsedMs) || elapsedMs < 0) {
    throw new RangeError('elapsedMs must be a finite number >= 0');
  }
  const exponent = GROWTH_PER_MS * elapsedMs;
  const curve = ONE_X * Math.exp(exponent);
  const floor = Math.floor(curve);
  // The exponent carries a relative error of at most 2^-52 (the rate's own rounding, then the
  // product's), an absolute one of exponent·2^-52 that the curve keeps as a relative one; exp() and
  // the ×100 add an ulp each. Only a value that close to a whole hundredth can floor to the wrong side
  // (the first, at 322,680 ms, is 25,602,867,297.99997 and the double reads ...298): those few
  // instants, with a margin of 4 times the bound, are computed exactly.
  const slack = curve * (exponent + 2) * 2 ** -50;
  if (curve - floor > slack && floor + 1 - curve > slack) return floor;
  return Number.isSafeInteger(elapsedMs) ? exactHundredthsAt(elapsedMs) : floor;
}

// GROWTH_PER_MS as the exact fraction 6 / 100000, and a fixed point of 10^-60.
const GROWTH_NUMERATOR = 6n;
const GROWTH_DENOMINATOR = 100_000n;
const FIXED_ONE = 10n ** 60n;

/**
 * floor(100·e^(0.00006·ms)) from the Taylor series in bigint fixed point. Each term is truncated, so
 * the sum is short by at most e^x units of 10^-60 (x ≤ 35 for any crash point the game can reach):
 * wrong only for a value within 10^-44 of a whole hundredth.
 */
function exactHundredthsAt(ms: number): number {
  const numerator = GROWTH_NUMERATOR * BigInt(ms);
  let term = FIXED_ONE;
  let sum = 0n;
  for (let k = 1n; term > 0n; k++) {
    sum += term;
    term = (term * numerator) / (GROWTH_DENOMINATOR * k);
  }
  return Number((BigInt(ONE_X) * sum) / FIXED_ONE);
}

/**
 * Smallest whole millisecond at which `multiplierAt` reaches `hundredths`. The logarithm gives a
 * guess that float rounding can put one step off, so it is corrected against `multiplierAt` itself:
 * the engine must never disagree with the curve it reports to clients.
 */
export function elapsedForMultiplier(hundredths: number): number {
  if (!Number.isSafeInteger(hundredths)) {
    throw new RangeError('hundredths must be a safe integer');
  }
  if (hundredths <= ONE_X) return 0;
  let ms = Math.max(0, Math.ceil(Math.log(hundredths / ONE_X) / GROWTH_PER_MS));
  while (multiplierAt(ms) < hundredths) ms++;
  while (ms > 0 && multiplierAt(ms - 1) >= hundredths) ms--;
  return ms;
}

/** Running time of a round that busts at `crashHundredths`; a 1.00x round busts at 0 ms. */
export function crashElapsedMs(crashHundredths: number): number {
  return elapsedForMultiplier(crashHundredths);
}

/**
 * floor(amount * multiplier / 100) in integer minor units. A product up to 2^53 is an exact double and
 * subtracting its (exact) remainder leaves a multiple of 100, so the division involves no rounding at
 * all; a larger product would already be rounded, so it goes through BigInt.
 */
export function payoutFor(amount: number, multiplierHundredths: number): number {
  if (!Number.isSafeInteger(amount) || amount < 0) {
    throw new RangeError('amount must be a non-negative safe integer');
  }
  if (!Number.isSafeInteger(multiplierHundredths) || multiplierHundredths < 0) {
    throw new RangeError('multiplierHundredths must be a non-negative safe integer');
  }
  const product = amount * multiplierHundredths;
  if (Number.isSafeInteger(product)) {
    return (product - (product % ONE_X)) / ONE_X;
  }
  const exact = (BigInt(amount) * BigInt(multiplierHundredths)) / BigInt(ONE_X);
  if (exact > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError('payout exceeds the safe integer range');
  }
  return Number(exact);
}

/**
 * Hundredths to the JSON number (250 -> 2.5). Dividing an integer by 100 is correctly rounded, so the
 * result is the double closest to the two-decimal value and prints as exactly that decimal.
 */
export function formatMultiplier(hundredths: number): number {
  if (!Number.isSafeInteger(hundredths)) {
    throw new RangeError('hundredths must be a safe integer');
  }
  return hundredths / ONE_X;
}

/** A closed Crash round's outcome as presented (v1): its crash point as a JSON multiplier. */
export function presentCrashOutcome(outcome: { crash_point: number }): { crash_point: number } {
  return { crash_point: formatMultiplier(outcome.crash_point) };
}

const DECIMAL_PATTERN = /^(\d+)(?:\.(\d{1,2}))?$/;

/**
 * JSON number to hundredths (2.5 -> 250), or null if it is negative, not finite, has more than two
 * decimals or is too large. Decimals are judged on the shortest string that round-trips the double
 * (what a client wrote), so 1.1 is accepted although 1.1 * 100 is 110.00000000000001 in binary.
 * Range checks such as "at least 1.01x" are left to the caller.
 */
export function parseMultiplier(value: number): number | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return null;
  // Exponent forms only appear below 1e-6 (too many decimals) or from 1e21 (far beyond safe range).
  const match = DECIMAL_PATTERN.exec(String(value));
  if (match === null) return null;
  const whole = Number(match[1]);
  const fraction = Number((match[2] ?? '').padEnd(2, '0'));
  const hundredths = whole * ONE_X + fraction;
  return Number.isSafeInteger(hundredths) ? hundredths : null;
}
