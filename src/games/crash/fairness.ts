/**
 * Provably-fair Crash outcomes, following bustabit's v2 scheme so that players can check every
 * round with bustabit's public tooling and reasoning.
 *
 * The hash chain a round's seed comes from is the engine's, shared by every game (engine/hash-chain.ts).
 *
 * Crash point: HMAC-SHA256 with the salt (the hex string of a Bitcoin block hash, used as UTF-8 text)
 * as the KEY and the game hash decoded to its 32 raw bytes as the MESSAGE. bustabit's seeding-event
 * post shows the message as a string, but bustabit's own verifier (github.com/bustabit/verifier,
 * `gameResult(PREV_GAME_SALT, hexToBytes(hash))`) feeds the raw bytes, and only that variant
 * reproduces the results bustabit published.
 */
import { createHmac } from 'node:crypto';
import { assertGameHash } from '../engine/hash-chain';

/** bustabit's terminating hash for the v2 chain, i.e. SHA-256 of the hex of game #1's hash. */
export const BUSTABIT_V2_TERMINATING_HASH = '86728f5fc3bd99db94d3cdaf105d67788194e9701bf95d049ad0e1ee3d004277';

const TWO_POW_52 = 1n << 52n;
const BP_PER_UNIT = 10_000n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function assertHouseEdge(houseEdgeBp: number): void {
  if (!Number.isInteger(houseEdgeBp) || houseEdgeBp < 0 || houseEdgeBp >= 10_000) {
    throw new RangeError('houseEdgeBp must be an integer in [0, 10000)');
  }
}

/** The 52 most significant bits of HMAC-SHA256(key = salt text, message = raw game-hash bytes). */
export function crashRandomFromHash(gameHash: string, salt: string): number {
  assertGameHash(gameHash, 'gameHash');
  if (salt.length === 0) throw new RangeError('salt must not be empty');
  const digest = createHmac('sha256', salt).update(Buffer.from(gameHash, 'hex')).digest();
  // 48 bits from the first six bytes, then the high nibble of the seventh: 52 bits, exact in a double.
  return digest.readUIntBE(0, 6) * 16 + (digest[6]! >> 4);
}

/**
 * Crash point in hundredths for a 52-bit random `r`:
 * max(100, floor((10000 - edge) * 2^52 / (100 * (2^52 - r)))), evaluated exactly.
 * With a 1% edge this is bustabit's floor(99 / (1 - r / 2^52)) without floating-point rounding.
 * Results beyond Number.MAX_SAFE_INTEGER (about one round in 10^12) are capped there, so the value
 * stays an exact integer; no accepted target can reach that far anyway.
 */
export function crashPointFromRandom(r: number, houseEdgeBp: number): number {
  if (!Number.isSafeInteger(r) || r < 0 || r >= Number(TWO_POW_52)) {
    throw new RangeError('r must be an integer in [0, 2^52)');
  }
  assertHouseEdge(houseEdgeBp);
  const numerator = (BP_PER_UNIT - BigInt(houseEdgeBp)) * TWO_POW_52;
  const hundredths = numerator / (100n * (TWO_POW_52 - BigInt(r)));
  if (hundredths < 100n) return 100;
  return hundredths > MAX_SAFE ? Number.MAX_SAFE_INTEGER : Number(hundredths);
}

/** Crash point (hundredths, >= 100) of the game with this hash. */
export function crashPointFromHash(gameHash: string, salt: string, houseEdgeBp: number): number {
  return crashPointFromRandom(crashRandomFromHash(gameHash, salt), houseEdgeBp);
}

/**
 * How many of the 2^52 equally likely randoms give a crash point >= `targetHundredths`. Divided by
 * 2^52 it is the exact probability that a bet with that auto-cashout target wins.
 */
export function winningRandomCount(targetHundredths: number, houseEdgeBp: number): bigint {
  if (!Number.isSafeInteger(targetHundredths) || targetHundredths < 1) {
    throw new RangeError('targetHundredths must be a positive integer');
  }
  assertHouseEdge(houseEdgeBp);
  if (targetHundredths <= 100) return TWO_POW_52;
  // crash >= t  <=>  (10000 - edge) * 2^52 / (100 * (2^52 - r)) >= t  <=>  2^52 - r <= bound.
  const bound = ((BP_PER_UNIT - BigInt(houseEdgeBp)) * TWO_POW_52) / (100n * BigInt(targetHundredths));
  return bound < TWO_POW_52 ? bound : TWO_POW_52;
}

export const RANDOM_SPACE = TWO_POW_52;
