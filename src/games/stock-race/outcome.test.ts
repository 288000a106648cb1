import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../errors/codes';
import {
  deriveStockRaceOutcome,
  drawStocks,
  intermediateMoves,
  moveFromDigest,
  pctFromBp,
  raceKey,
  selectWinner,
  stockRacePayoutMinor,
  type StockDraw,
} from './outcome';

const SYMBOLS = ['AAPL', 'MSFT', 'NVDA', 'TSLA', 'AMZN', 'GOOG', 'META', 'NFLX'] as const;
const SEED = 'b3c62b439d309f360123456789abcdef0123456789abcdef0123456789abcdef';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainError) return e.code;
    throw e;
  }
  return undefined;
}

/** The documented recipe written out again with different tools (bigint shift instead of parseInt). */
function independentMove(seed: string, symbol: string): { pct_bp: number; digest: string } {
  const digest = createHmac('sha256', Buffer.from(seed, 'hex')).update(symbol).digest('hex');
  const r = BigInt(`0x${digest}`) >> 204n; // 256 - 52
  return { pct_bp: Number(r % 2001n) - 1000, digest };
}

describe('deriveStockRaceOutcome', () => {
  it('reproduces the pinned vector', () => {
    const outcome = deriveStockRaceOutcome(SEED, SYMBOLS);
    expect(outcome).toEqual({
      moves: [
        { symbol: 'AAPL', pct_bp: -494 },
        { symbol: 'MSFT', pct_bp: -237 },
        { symbol: 'NVDA', pct_bp: 512 },
        { symbol: 'TSLA', pct_bp: -436 },
        { symbol: 'AMZN', pct_bp: -270 },
        { symbol: 'GOOG', pct_bp: 870 },
        { symbol: 'META', pct_bp: 575 },
        { symbol: 'NFLX', pct_bp: 570 },
      ],
      winner: 'GOOG',
      winner_pct_bp: 870,
    });
    // also checked with `printf %s AAPL | openssl dgst -sha256 -mac HMAC -macopt hexkey:<SEED>`
    expect(drawStocks(SEED, SYMBOLS)[0]?.digest).toBe(
      'e59419e8960d95a571a5ed4106dca799ff155c5392965023e326a62fba7a43e5',
    );
  });

  it('agrees with an independent recomputation of the documented recipe', () => {
    const independent = SYMBOLS.map((s) => ({ symbol: s, ...independentMove(SEED, s) }));
    expect(drawStocks(SEED, SYMBOLS)).toEqual(independent);
    const best = [...independent].sort((a, b) => b.pct_bp - a.pct_bp)[0];
    expect(deriveStockRaceOutcome(SEED, SYMBOLS).winner).toBe(best?.symbol);
  });

  it('is deterministic and independent of letter case in the seed', () => {
    const a = deriveStockRaceOutcome(SEED, SYMBOLS);
    expect(deriveStockRaceOutcome(SEED, SYMBOLS)).toEqual(a);
    expect(deriveStockRaceOutcome(SEED.toUpperCase(), SYMBOLS)).toEqual(a);
  });

  it("keeps each symbol's move when the configured order changes", () => {
    const reversed = [...SYMBOLS].reverse();
    const out = deriveStockRaceOutcome(SEED, reversed);
    expect(out.moves.map((m) => m.symbol)).toEqual(reversed);
    expect(out.moves.find((m) => m.symbol === 'AAPL')?.pct_bp).toBe(-494);
    expect(out.winner).toBe('GOOG');
  });

  it('changes with the seed', () => {
    const other = createHash('sha256').update('another round').digest('hex');
    expect(deriveStockRaceOutcome(other, SYMBOLS).moves).not.toEqual(deriveStockRaceOutcome(SEED, SYMBOLS).moves);
  });

  it('refuses malformed seeds and symbol lists', () => {
    expect(codeOf(() => deriveStockRaceOutcome(SEED.slice(1), SYMBOLS))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => deriveStockRaceOutcome(`${SEED.slice(1)}g`, SYMBOLS))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => deriveStockRaceOutcome(SEED, ['AAPL']))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => deriveStockRaceOutcome(SEED, ['AAPL', 'AAPL']))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => deriveStockRaceOutcome(SEED, ['AAPL', 'MS:FT']))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => deriveStockRaceOutcome(SEED, ['AAPL', '']))).toBe('VALIDATION_FAILED');
  });
});

describe('moveFromDigest', () => {
  it('maps the extremes of the first 52 bits', () => {
    const rest = '0'.repeat(51);
    expect(moveFromDigest(`0000000000000${rest}`)).toBe(-1000);
    expect(moveFromDigest(`00000000007d0${rest}`)).toBe(1000); // r = 2000
    expect(moveFromDigest(`00000000007d1${rest}`)).toBe(-1000); // r = 2001 wraps
    expect(moveFromDigest(`00000000003e8${rest}`)).toBe(0); // r = 1000
    // 2^52 - 1 = 2001 * 2250674476447 + 48
    expect(moveFromDigest(`fffffffffffff${rest}`)).toBe(48 - 1000);
  });

  it('ignores everything after the first 52 bits', () => {
    expect(moveFromDigest(`00000000003e8${'f'.repeat(51)}`)).toBe(0);
  });
});

describe('tie-breaking', () => {
  const draw = (symbol: string, pct_bp: number, lead: string): StockDraw => ({
    symbol,
    pct_bp,
    digest: lead.padEnd(64, '0'),
  });

  it('gives an equal move to the larger digest, wherever it sits in the list', () => {
    const a = draw('AAPL', 700, '1');
    const z = draw('ZZZZ', 700, 'f');
    const low = draw('MSFT', 650, 'ff');
    expect(selectWinner([a, z, low]).symbol).toBe('ZZZZ');
    expect(selectWinner([z, a, low]).symbol).toBe('ZZZZ');
    expect(selectWinner([low, draw('AAPL', 700, 'f'), draw('ZZZZ', 700, '1')]).symbol).toBe('AAPL');
  });

  it('compares digests beyond the first differing nibble', () => {
    expect(selectWinner([draw('A', 5, 'abc1'), draw('B', 5, 'abc2')]).symbol).toBe('B');
  });

  it('keeps the higher move regardless of digest', () => {
    expect(selectWinner([draw('A', 6, '0'), draw('B', 5, 'f')]).symbol).toBe('A');
  });

  it('decides real ties that occur between derived moves', () => {
    // Found by scanning seeds sha256("tie-search-<i>"): at i = 797 MSFT and GOOG both move +9.50%.
    // GOOG would win alphabetically; MSFT's digest (0x71...) beats GOOG's (0x2e...).
    const seed797 = createHash('sha256').update('tie-search-797').digest('hex');
    const draws = drawStocks(seed797, SYMBOLS);
    expect(draws.filter((d) => d.pct_bp === 950).map((d) => d.symbol)).toEqual(['MSFT', 'GOOG']);
    expect(deriveStockRaceOutcome(seed797, SYMBOLS)).toMatchObject({ winner: 'MSFT', winner_pct_bp: 950 });
    // At i = 505 TSLA and GOOG both move +9.04%; TSLA comes first in the list, GOOG's digest is larger.
    const seed505 = createHash('sha256').update('tie-search-505').digest('hex');
    expect(deriveStockRaceOutcome(seed505, SYMBOLS)).toMatchObject({ winner: 'GOOG', winner_pct_bp: 904 });
  });
});

describe('symmetry', () => {
  it('lets every symbol win about 1/N of 20,000 rounds', () => {
    const wins = new Map<string, number>(SYMBOLS.map((s) => [s, 0]));
    let seed = createHash('sha256').update('symmetry').digest('hex');
    const rounds = 20_000;
    for (let i = 0; i < rounds; i++) {
      const { winner } = deriveStockRaceOutcome(seed, SYMBOLS);
      wins.set(winner, (wins.get(winner) ?? 0) + 1);
      seed = createHash('sha256').update(seed).digest('hex');
    }
    // expected 2500 each, standard deviation about 47; the bounds are about 6 sigma wide
    for (const s of SYMBOLS) {
      expect(wins.get(s)).toBeGreaterThan(2200);
      expect(wins.get(s)).toBeLessThan(2800);
    }
  });
});

describe('pctFromBp', () => {
  it('builds the JSON pct exactly', () => {
    expect(pctFromBp(123)).toBe(1.23);
    expect(pctFromBp(-5)).toBe(-0.05);
    expect(pctFromBp(870)).toBe(8.7);
    expect(pctFromBp(1000)).toBe(10);
    expect(pctFromBp(-1000)).toBe(-10);
    expect(Object.is(pctFromBp(0), 0)).toBe(true);
    expect(JSON.stringify({ pct: pctFromBp(-29) })).toBe('{"pct":-0.29}');
  });

  it('refuses non-integers', () => {
    expect(codeOf(() => pctFromBp(1.5))).toBe('VALIDATION_FAILED');
  });
});

describe('stockRacePayoutMinor', () => {
  it('rounds down to the minor unit', () => {
    // 1001 * 8 * 9500 / (3 * 10000) = 2535.8666...
    expect(stockRacePayoutMinor(1001, 8, 3, 9500)).toBe(2535);
    expect(stockRacePayoutMinor(1000, 8, 1, 9500)).toBe(7600);
    expect(stockRacePayoutMinor(1000, 8, 7, 9500)).toBe(1085); // 1085.714...
    expect(stockRacePayoutMinor(1, 8, 7, 9500)).toBe(1); // 1.0857
    expect(stockRacePayoutMinor(1, 8, 7, 8000)).toBe(0); // 0.914: a 1-cent bet on 7 of 8 returns nothing
    expect(stockRacePayoutMinor(0, 8, 3, 9500)).toBe(0);
  });

  it('stays exact where a float product would not be', () => {
    // stake * 8 * 9999 exceeds 2^53; the float formula gives 3002099511605178, one unit too many
    const stake = 2 ** 50 + 2;
    expect(Math.floor((stake * 8 * 9999) / 30000)).toBe(3002099511605178);
    expect(stockRacePayoutMinor(stake, 8, 3, 9999)).toBe(3002099511605177);
  });

  it('refuses payouts beyond the safe integer range', () => {
    expect(codeOf(() => stockRacePayoutMinor(Number.MAX_SAFE_INTEGER, 8, 1, 9500))).toBe('STAKE_OUT_OF_RANGE');
  });

  it('refuses impossible selections and settings', () => {
    expect(codeOf(() => stockRacePayoutMinor(1000, 8, 0, 9500))).toBe('INVALID_SELECTION');
    expect(codeOf(() => stockRacePayoutMinor(1000, 8, 9, 9500))).toBe('INVALID_SELECTION');
    expect(codeOf(() => stockRacePayoutMinor(1000, 8, 3, 0))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => stockRacePayoutMinor(1000, 8, 3, 10_001))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => stockRacePayoutMinor(10.5, 8, 3, 9500))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => stockRacePayoutMinor(-1, 8, 3, 9500))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => stockRacePayoutMinor(1000, 1, 1, 9500))).toBe('VALIDATION_FAILED');
  });
});

describe('intermediateMoves', () => {
  const finals = deriveStockRaceOutcome(SEED, SYMBOLS).moves;

  it('starts at zero and ends exactly at the outcome', () => {
    expect(intermediateMoves(SEED, SYMBOLS, 0).map((m) => m.pct_bp)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(intermediateMoves(SEED, SYMBOLS, 1000)).toEqual(finals);
  });

  it('draws the same pinned frames everywhere', () => {
    expect(intermediateMoves(SEED, SYMBOLS, 500).map((m) => m.pct_bp)).toEqual([
      -282, -312, 208, -90, 40, 200, 282, 381,
    ]);
    expect(intermediateMoves(SEED, SYMBOLS, 999).map((m) => m.pct_bp)).toEqual([
      -493, -237, 511, -435, -270, 869, 574, 569,
    ]);
  });

  it('races rather than revealing: mid-race order differs from the final order', () => {
    const mid = intermediateMoves(SEED, SYMBOLS, 500);
    const leader = [...mid].sort((a, b) => b.pct_bp - a.pct_bp)[0]?.symbol;
    expect(leader).toBe('NFLX');
    expect(leader).not.toBe(deriveStockRaceOutcome(SEED, SYMBOLS).winner);
  });

  it('stays within ±10.00% on every frame and moves in small steps', () => {
    let prev = intermediateMoves(SEED, SYMBOLS, 0);
    for (let p = 1; p <= 1000; p++) {
      const frame = intermediateMoves(SEED, SYMBOLS, p);
      frame.forEach((m, i) => {
        expect(Math.abs(m.pct_bp)).toBeLessThanOrEqual(1000);
        expect(Math.abs(m.pct_bp - (prev[i]?.pct_bp ?? 0))).toBeLessThanOrEqual(10);
      });
      prev = frame;
    }
  });

  it('refuses progress outside 0..1000 or fractional', () => {
    expect(codeOf(() => intermediateMoves(SEED, SYMBOLS, -1))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => intermediateMoves(SEED, SYMBOLS, 1001))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => intermediateMoves(SEED, SYMBOLS, 0.5))).toBe('VALIDATION_FAILED');
  });
});

describe('raceKey (the chain salt keys the race)', () => {
  const BUSTABIT_GAME = 'b2acd37fbdb5509926ab5d7329704c840f8467266c90019682f3b260a029bdba';
  const SALT = '5f0c1d2e3a4b5c6d7e8f90112233445566778899aabbccddeeff001122334455';

  it('is HMAC-SHA256(key = salt text, message = seed bytes), and the seed itself without a salt', () => {
    const hmac = createHmac('sha256', SALT).update(Buffer.from(BUSTABIT_GAME, 'hex')).digest('hex');
    expect(raceKey(BUSTABIT_GAME, SALT)).toBe(hmac);
    expect(raceKey(BUSTABIT_GAME, null)).toBe(BUSTABIT_GAME);
    expect(() => raceKey('zz', SALT)).toThrow(DomainError);
  });

  it('gives the moves the shell commands of docs/fairness.md print', () => {
    // Computed with openssl dgst -mac HMAC (key:$SALT over the seed bytes, then hexkey: per symbol).
    const draws = drawStocks(raceKey(BUSTABIT_GAME, SALT), ['AAPL', 'MSFT', 'NVDA']);
    expect(draws.map((d) => [d.symbol, d.pct_bp])).toEqual([
      ['AAPL', 204],
      ['MSFT', 434],
      ['NVDA', -436],
    ]);
    expect(draws[1]!.digest).toBe('fc66f908ffe890784921441139a689845203c818abc57f1a471b52d9d7c313af');
  });

  it('changes the race when only the salt changes', () => {
    const a = deriveStockRaceOutcome(raceKey(SEED, SALT), SYMBOLS);
    const b = deriveStockRaceOutcome(raceKey(SEED, SALT.replace(/^5/, '6')), SYMBOLS);
    expect(a.moves).not.toEqual(b.moves);
  });
});
