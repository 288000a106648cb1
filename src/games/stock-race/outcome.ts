/**
 * Provably fair Stock Race outcome. Pure functions: the same revealed seed and the same configured
 * symbol list always give the same race, and anyone can recompute it.
 *
 * Per symbol, in the configured order:
 *   digest  = HMAC-SHA256(key = the 32 bytes encoded by the 64-hex-digit seed,
 *                         message = the symbol's ASCII bytes), as 64 lowercase hex digits
 *   r       = the first 13 hex digits of digest (the first 52 bits) as an integer, 0 <= r < 2^52
 *   pct_bp  = (r mod 2001) - 1000    // the move in hundredths of a percent, -10.00% .. +10.00%
 * winner = the symbol with the highest pct_bp; on equal pct_bp, the one whose digest is larger
 * (hex strings of equal length compare like the numbers they spell).
 *
 * Shell check of one digest: printf %s AAPL | openssl dgst -sha256 -mac HMAC -macopt hexkey:<seed>
 *
 * Why `mod 2001` is acceptable: 2^52 = 2001 * 2250674476447 + 49, so the 49 lowest moves
 * (-10.00% .. -9.52%) each have one preimage more than the others: a relative excess of 4.4e-13, far
 * below anything a simulation or a player could observe. More importantly it cannot favour a stock:
 * every symbol goes through the same mapping, and the win probability argument below does not
 * depend on the mapping being uniform at all.
 */
import { createHmac } from 'node:crypto';
import { DomainError } from '../../errors/codes';
import { minorToDecimal } from '../../money/currency';

export const MAX_MOVE_BP = 1000;
const MOVE_VALUES = 2 * MAX_MOVE_BP + 1;
const SEED_HEX = /^[0-9a-fA-F]{64}$/;
// ':' is not allowed in a symbol, so the path message `${symbol}:path` can never equal an outcome
// message, and the display path can never be used to predict or alter the outcome digests.
const SYMBOL = /^[A-Za-z0-9._-]{1,32}$/;

export interface StockMove {
  symbol: string;
  pct_bp: number;
}

export interface StockRaceOutcome {
  /** In the configured symbol order. */
  moves: StockMove[];
  winner: string;
  winner_pct_bp: number;
}

export interface StockDraw extends StockMove {
  /** Full HMAC-SHA256 digest, 64 lowercase hex digits. */
  digest: string;
}

function assertSeed(seed: string): void {
  if (typeof seed !== 'string' || !SEED_HEX.test(seed)) {
    throw new DomainError('VALIDATION_FAILED', 'seed must be 64 hexadecimal digits');
  }
}

function assertSymbols(symbols: readonly string[]): void {
  if (!Array.isArray(symbols) || symbols.length < 2) {
    throw new DomainError('VALIDATION_FAILED', 'a stock race needs at least two symbols');
  }
  const seen = new Set<string>();
  for (const s of symbols) {
    if (typeof s !== 'string' || !SYMBOL.test(s)) {
      throw new DomainError('VALIDATION_FAILED', `invalid stock symbol: ${String(s)}`);
    }
    if (seen.has(s)) throw new DomainError('VALIDATION_FAILED', `duplicate stock symbol: ${s}`);
    seen.add(s);
  }
}

function hmacHex(key: Buffer, message: string): string {
  return createHmac('sha256', key).update(message, 'ascii').digest('hex');
}

/** The move in hundredths of a percent encoded by one digest (see the module comment). */
export function moveFromDigest(digest: string): number {
  if (!/^[0-9a-f]{64}$/.test(digest)) {
    throw new DomainError('VALIDATION_FAILED', 'digest must be 64 lowercase hexadecimal digits');
  }
  // 13 hex digits = 52 bits < 2^53: parseInt and % are exact on doubles.
  const r = Number.parseInt(digest.slice(0, 13), 16);
  return (r % MOVE_VALUES) - MAX_MOVE_BP;
}

/**
 * The key a salted round races with: HMAC-SHA256(key = the salt's text, message = the 32 seed bytes),
 * as 64 lowercase hex digits (the same construction as a Crash point's random). The chain's salt is
 * fixed only after its commitment is published, so no one choosing a chain could know the races it
 * holds. A round without a salt (recorded before chains had one) races with its seed directly.
 */
export function raceKey(seed: string, salt: string | null): string {
  assertSeed(seed);
  if (salt === null) return seed.toLowerCase();
  if (typeof salt !== 'string' || salt.length === 0) {
    throw new DomainError('VALIDATION_FAILED', 'salt must not be empty');
  }
  return createHmac('sha256', salt).update(Buffer.from(seed, 'hex')).digest('hex');
}

/** Every symbol's digest and move, in the given order. */
export function drawStocks(seed: string, symbols: readonly string[]): StockDraw[] {
  assertSeed(seed);
  assertSymbols(symbols);
  const key = Buffer.from(seed, 'hex');
  return symbols.map((symbol) => {
    const digest = hmacHex(key, symbol);
    return { symbol, pct_bp: moveFromDigest(digest), digest };
  });
}

/**
 * Highest move wins; an equal move is decided by the larger digest.
 *
 * Not alphabetical, and not configured order: either would hand every tie to the same stocks, so a
 * player who always picked "AAPL" would win slightly more than 1/N of the time. Each symbol's
 * (pct_bp, digest) pair is an independent draw from the same distribution (HMAC outputs for
 * distinct messages under a secret key), so ranking by the pair makes every position in the list
 * exactly equally likely to hold the maximum. Equal digests would need a SHA-256 collision; should
 * one ever appear, the earlier symbol wins rather than the function failing.
 */
export function selectWinner(draws: readonly StockDraw[]): StockDraw {
  let best: StockDraw | undefined;
  for (const d of draws) {
    if (best === undefined || d.pct_bp > best.pct_bp || (d.pct_bp === best.pct_bp && d.digest > best.digest)) {
      best = d;
    }
  }
  if (best === undefined) throw new DomainError('VALIDATION_FAILED', 'no stocks to race');
  return best;
}

export function deriveStockRaceOutcome(seed: string, symbols: readonly string[]): StockRaceOutcome {
  const draws = drawStocks(seed, symbols);
  const winner = selectWinner(draws);
  return {
    moves: draws.map(({ symbol, pct_bp }) => ({ symbol, pct_bp })),
    winner: winner.symbol,
    winner_pct_bp: winner.pct_bp,
  };
}

/** Hundredths of a percent to the JSON `pct` number: 123 -> 1.23, -5 -> -0.05. */
export function pctFromBp(bp: number): number {
  if (!Number.isSafeInteger(bp)) {
    throw new DomainError('VALIDATION_FAILED', `pct_bp must be an integer: ${bp}`);
  }
  return minorToDecimal(bp, 2);
}

/** A closed race's outcome as presented (v1): the winner and every stock's move as `pct` numbers. */
export function presentStockRaceOutcome(o: StockRaceOutcome): {
  winner: string;
  pct: number;
  stocks: { symbol: string; pct: number }[];
} {
  return {
    winner: o.winner,
    pct: pctFromBp(o.winner_pct_bp),
    stocks: o.moves.map((m) => ({ symbol: m.symbol, pct: pctFromBp(m.pct_bp) })),
  };
}

/**
 * Payout of a winning bet in minor units: floor(stake * N * rtp / (k * 10000)) for k of N stocks
 * selected, computed in bigint so no intermediate product is ever rounded. A winning k-of-N bet hits
 * with probability k/N, so its expected return is rtp (before the floor, which only lowers it).
 */
export function stockRacePayoutMinor(
  stakeMinor: number,
  symbolCount: number,
  selectedCount: number,
  rtpBp: number,
): number {
  if (!Number.isSafeInteger(stakeMinor) || stakeMinor < 0) {
    throw new DomainError('VALIDATION_FAILED', 'stake must be a non-negative integer of minor units');
  }
  if (!Number.isSafeInteger(symbolCount) || symbolCount < 2) {
    throw new DomainError('VALIDATION_FAILED', 'a stock race needs at least two symbols');
  }
  if (!Number.isSafeInteger(selectedCount) || selectedCount < 1 || selectedCount > symbolCount) {
    throw new DomainError('INVALID_SELECTION', `select between 1 and ${symbolCount} stocks (got ${selectedCount})`);
  }
  if (!Number.isSafeInteger(rtpBp) || rtpBp < 1 || rtpBp > 10_000) {
    throw new DomainError('VALIDATION_FAILED', `rtp must be 1..10000 basis points (got ${rtpBp})`);
  }
  const payout = (BigInt(stakeMinor) * BigInt(symbolCount) * BigInt(rtpBp)) / (BigInt(selectedCount) * 10_000n);
  if (payout > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new DomainError('STAKE_OUT_OF_RANGE', 'payout would exceed the representable range');
  }
  return Number(payout);
}

// Live display path. Integer-only so every client and server draws the same frames.
const PROGRESS_END = 1000;
const WOBBLE_BP = 300;
const KNOT_SEGMENTS = 8;
const SEGMENT = PROGRESS_END / KNOT_SEGMENTS;

/** Truncating integer division; exact because both operands stay far below 2^53. */
function idiv(a: number, b: number): number {
  return (a - (a % b)) / b;
}

/**
 * Each stock's displayed move at `progressPermille` (integer 0..1000) of the race: 0 at the start,
 * exactly the final move at 1000. The final move is eased in (smoothstep), and a seed-derived wobble
 * (piecewise linear through 9 knots in ±3.00%, scaled by 4p(1-p)) makes the early frames a race
 * rather than a straight reveal; it vanishes at both ends. Values are clamped to ±10.00%.
 *
 * The path converges on the result, so frames must only be published once betting has closed.
 */
export function intermediateMoves(seed: string, symbols: readonly string[], progressPermille: number): StockMove[] {
  if (!Number.isInteger(progressPermille) || progressPermille < 0 || progressPermille > PROGRESS_END) {
    throw new DomainError('VALIDATION_FAILED', 'progress must be an integer permille 0..1000');
  }
  const p = progressPermille;
  const draws = drawStocks(seed, symbols);
  const key = Buffer.from(seed, 'hex');
  // smoothstep(p) = p^2 (3 - 2p), here scaled by 1000^3.
  const easeNum = p * p * (3 * PROGRESS_END - 2 * p);
  const easeDen = PROGRESS_END ** 3;
  // 4p(1-p), scaled by 1000^2; peaks at 1000^2 when p = 500.
  const envNum = 4 * p * (PROGRESS_END - p);
  const segment = Math.min(Math.floor(p / SEGMENT), KNOT_SEGMENTS - 1);
  const t = p - segment * SEGMENT;
  return draws.map(({ symbol, pct_bp }) => {
    const path = Buffer.from(hmacHex(key, `${symbol}:path`), 'hex');
    const knot = (i: number): number => (path.readUInt16BE(2 * i) % (2 * WOBBLE_BP + 1)) - WOBBLE_BP;
    const knotNum = knot(segment) * (SEGMENT - t) + knot(segment + 1) * t;
    const wobble = idiv(knotNum * envNum, SEGMENT * PROGRESS_END ** 2);
    const base = idiv(pct_bp * easeNum, easeDen);
    const shown = Math.max(-MAX_MOVE_BP, Math.min(MAX_MOVE_BP, base + wobble));
    return { symbol, pct_bp: shown === 0 ? 0 : shown };
  });
}
