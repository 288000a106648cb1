import { describe, expect, it } from 'vitest';
import { DEFAULT_BUSTABIT_SALT } from '../../config/game-defaults';
import type { ActiveCrashBet } from '../../bets/bet';
import type { Operator } from '../../operators/operator';
import { DEFAULT_OPERATOR_SETTINGS } from '../../operators/operator';
import type { Round } from '../engine/round';
import { decideCashout } from './crash-bets';
import { cappedPayout, capMultiplier, effectiveTarget, roundForcePoint, walkExits } from './crash-rules';

const NO_BET_CAP = Number.MAX_SAFE_INTEGER;
const fresh = (open: number) => ({ open, paid: 0 });
import { elapsedForMultiplier, multiplierAt, parseMultiplier, payoutFor } from './multiplier';

/**
 * Money and boundary arithmetic of Crash, checked against exact math (BigInt, or values of
 * floor(100·e^(0.00006·ms)) computed with 50 significant digits by Python's decimal module).
 */

/** ceil(maxPayout·100 / amount), at least 101: the lowest multiplier whose payout reaches the cap, exactly. */
function exactCap(amount: number, maxPayout: number): bigint {
  const n = BigInt(maxPayout) * 100n;
  const a = BigInt(amount);
  const q = (n + a - 1n) / a;
  return q < 101n ? 101n : q;
}

const exactPayout = (amount: number, m: number | bigint): bigint => (BigInt(amount) * BigInt(m)) / 100n;

describe('capMultiplier (forced cash-out point of the per-bet cap)', () => {
  it('is the lowest multiplier whose payout reaches max_payout_per_bet, for small and default caps', () => {
    for (const max of [1, 99, 100, 101, 1_005, 1_234_567, 10_000_000]) {
      for (const amount of [1, 2, 3, 7, 99, 100, 101, 333, 999, 1_000, 65_537, 999_999, 1_000_000]) {
        if (amount > max) continue; // refused at placement
        const at = capMultiplier(amount, max);
        expect(BigInt(at)).toBe(exactCap(amount, max));
        expect(cappedPayout(amount, at, max)).toBe(max);
        if (at > 101) expect(payoutFor(amount, at - 1)).toBeLessThan(max);
      }
    }
  });

  // Settings allow max_payout_per_bet up to 2^53 - 1 (src/operators/operator.ts). Above about 9·10^13
  // (max × 100 beyond 2^53), the float division rounded a non-integer quotient down onto an integer,
  // and the bet was forced out one hundredth early, paid below its cap (payout < max_payout_per_bet).
  it('stays exact for caps whose product with 100 is beyond 2^53 (no forced cash-out below the cap)', () => {
    const cases: [number, number][] = [
      [2_689, 123_456_789_012_345],
      [3, 1_000_000_000_000_000],
      [1, Number.MAX_SAFE_INTEGER],
      [7, Number.MAX_SAFE_INTEGER],
      [999_999, Number.MAX_SAFE_INTEGER],
    ];
    for (const [amount, max] of cases) {
      const at = capMultiplier(amount, max);
      const exact = exactCap(amount, max);
      if (exact > BigInt(Number.MAX_SAFE_INTEGER)) {
        // Beyond any crash point (they stop at 2^53 - 1): never reached, so never paid below the cap.
        expect(at).toBeGreaterThan(Number.MAX_SAFE_INTEGER);
        continue;
      }
      expect(BigInt(at), `amount ${amount}, max ${max}`).toBe(exact);
      expect(exactPayout(amount, at) >= BigInt(max)).toBe(true);
      expect(exactPayout(amount, at - 1) < BigInt(max)).toBe(true);
    }
    expect(effectiveTarget({ amount: 2_689, autoCashout: null }, 123_456_789_012_345)).toEqual({
      at: 4_591_178_468_292,
      kind: 'forced',
    });
  });
});

describe('payoutFor against BigInt', () => {
  it('is floor(amount × multiplier / 100) to the unit, near the stake max and near 2^53 / 100', () => {
    const amounts = [1, 99, 100, 101, 999_999, 1_000_000, 90_071_992_547_409, Number.MAX_SAFE_INTEGER];
    const multipliers = [0, 100, 101, 199, 377, 1_000_001, 4_591_178_468_292, Number.MAX_SAFE_INTEGER];
    for (const amount of amounts) {
      for (const m of multipliers) {
        const exact = exactPayout(amount, m);
        if (exact > BigInt(Number.MAX_SAFE_INTEGER)) {
          expect(() => payoutFor(amount, m)).toThrow(RangeError);
        } else {
          expect(BigInt(payoutFor(amount, m)), `${amount} × ${m}`).toBe(exact);
        }
      }
    }
    // A pseudo-random sweep across the safe range (deterministic LCG).
    let x = 12_345n;
    for (let i = 0; i < 20_000; i++) {
      x = (x * 6_364_136_223_846_793_005n + 1_442_695_040_888_963_407n) % (1n << 64n);
      const amount = Number(x % 1_000_001n);
      const m = 100 + Number((x >> 20n) % 100_000_000_000n);
      const exact = exactPayout(amount, m);
      if (exact <= BigInt(Number.MAX_SAFE_INTEGER)) expect(BigInt(payoutFor(amount, m))).toBe(exact);
    }
  });
});

describe('multiplierAt against high-precision floor(100·e^(0.00006·ms))', () => {
  // The milliseconds below 322,680 where 100·e^(0.00006·ms) lies closest to a whole hundredth (within
  // 3.3·10^-5 of it), with the exact floor: the places where a float result could land one step off.
  it.each([
    [0, 100],
    [8_143, 162],
    [25_398, 458],
    [33_358, 739],
    [44_326, 1_429],
    [66_716, 5_475],
    [72_841, 7_908],
    [82_644, 14_240],
    [91_109, 23_664],
    [107_521, 63_350],
    [118_939, 125_681],
    [140_879, 468_790],
    [146_497, 656_705],
    [169_109, 2_550_270],
    [185_424, 6_787_614],
    [185_997, 7_025_031],
    [195_170, 12_180_783],
    [195_879, 12_710_133],
    [217_623, 46_854_152],
    [232_168, 112_139_051],
    [274_468, 1_419_045_339],
    [276_469, 1_600_065_153],
    [305_693, 9_239_468_376],
    [306_043, 9_435_548_851],
  ])('at %i ms is %i hundredths', (ms, exact) => {
    expect(multiplierAt(ms)).toBe(exact);
    expect(elapsedForMultiplier(exact)).toBeLessThanOrEqual(ms);
    expect(elapsedForMultiplier(exact + 1)).toBeGreaterThan(ms);
  });

  // From about 256 million x the double exp() was one hundredth above the exact floor at some instants
  // (first at 322,680 ms: exact 25,602,867,297.99997 hundredths). Such instants are now computed exactly.
  it('at 322,680 ms is 25,602,867,297 hundredths (the first instant where the double is off)', () => {
    expect(multiplierAt(322_680)).toBe(25_602_867_297);
  });
});

describe('auto_cashout parsing boundaries', () => {
  it.each([
    [1.01, 101],
    [1.1, 110],
    [1.0, 100],
    [2.35, 235],
    [1_000_000, 100_000_000],
    [999_999.99, 99_999_999],
    [1.005, null],
    [1.001, null],
    [0.1 + 0.2, null],
    [1e21, null],
    [1e-7, null],
    [-1.01, null],
    [Number.NaN, null],
  ])('%s -> %s', (value, hundredths) => {
    expect(parseMultiplier(value)).toBe(hundredths);
  });
});

describe('decideCashout at the edges of a round', () => {
  const now = 1_800_000_000_000;
  const operator = {
    id: 'op',
    mode: 'live',
    settings: DEFAULT_OPERATOR_SETTINGS,
  } as unknown as Operator;
  const rules = { salt: DEFAULT_BUSTABIT_SALT, houseEdgeBp: 100, engineStaleMs: 1_000 };
  const bet = (autoCashout: number | null, amount = 1_000): ActiveCrashBet =>
    ({
      id: 'b1',
      operatorId: 'op',
      game: 'crash',
      roundId: 'r1',
      roundNumber: 1,
      player: 'p',
      sessionId: null,
      currency: null,
      amount,
      autoCashout,
      selections: null,
      status: 'active',
      placedAt: now - 10_000,
    }) as ActiveCrashBet;
  // A sandbox round with a scripted crash point: the outcome is whatever the test says.
  const round = (crash: number, runningAt: number): Round =>
    ({
      id: 'r1',
      game: 'crash',
      roundNumber: 1,
      status: 'running',
      operatorId: 'op',
      settings: { scripted_crash_point: crash },
      seed: 'x',
      runningAt,
      heartbeatAt: now,
    }) as unknown as Round;

  it('an instant crash (1.00x) pays nothing, not even at 0 ms', () => {
    expect(() => decideCashout(rules, operator, 'b1', bet(null), round(100, now), now)).toThrow(
      expect.objectContaining({ code: 'BET_NOT_ACTIVE' }),
    );
    expect(() => decideCashout(rules, operator, 'b1', bet(101), round(100, now), now)).toThrow(
      expect.objectContaining({ code: 'BET_NOT_ACTIVE' }),
    );
  });

  it('pays one ms before the crash instant, refuses at it and after it', () => {
    for (const crash of [101, 126, 200, 377, 1_000, 12_345]) {
      const crashMs = elapsedForMultiplier(crash);
      const before = decideCashout(rules, operator, 'b1', bet(null), round(crash, now - (crashMs - 1)), now);
      expect(before.multiplier).toBe(multiplierAt(crashMs - 1));
      expect(before.multiplier).toBeLessThan(crash);
      expect(before.kind).toBe('manual');
      for (const late of [0, 1]) {
        expect(() => decideCashout(rules, operator, 'b1', bet(null), round(crash, now - crashMs - late), now)).toThrow(
          expect.objectContaining({ code: 'BET_NOT_ACTIVE' }),
        );
      }
    }
  });

  it('an auto target equal to the crash point is paid at exactly it, even when asked for after the crash', () => {
    const crashMs = elapsedForMultiplier(377);
    const paid = decideCashout(rules, operator, 'b1', bet(377), round(377, now - crashMs - 5), now);
    expect(paid).toMatchObject({ multiplier: 377, kind: 'auto' });
    expect(() => decideCashout(rules, operator, 'b1', bet(378), round(377, now - crashMs - 5), now)).toThrow(
      expect.objectContaining({ code: 'BET_NOT_ACTIVE' }),
    );
  });
});

describe('walkExits (the per-round cap with the bets that leave on their own)', () => {
  const list = (exits: { amount: number; at: number }[]) => {
    const planned = exits.map((e, i) => ({ bet: { id: `b${i}`, amount: e.amount }, at: e.at, kind: 'auto' as const }));
    let next = 0;
    return { planned, cursor: { peek: () => planned[next], take: () => void next++ }, rest: () => planned.slice(next) };
  };

  it('lets an exit before the force point leave first, which moves the force point up by what it was paid', () => {
    // Two stakes of 1,000 and a round cap of 3,000: together they reach it at 1.50x, but the first
    // leaves at 1.40x, paid 1,400; the other then brings the round to 3,000 at 1.60x
    // (1,400 + 1,000 × 1.60). Before what the round paid counted, the point moved to 3.00x and the
    // round paid 4,400 against its cap of 3,000.
    const caps = { perBet: NO_BET_CAP, perRound: 3_000 };
    const early = list([
      { amount: 1_000, at: 140 },
      { amount: 1_000, at: 10_000 },
    ]);
    expect(walkExits(early.cursor, fresh(2_000), caps, 159)).toEqual({
      taken: [early.planned[0]],
      forcedAt: null,
      exposure: { open: 1_000, paid: 1_400 },
    });
    const later = list([
      { amount: 1_000, at: 140 },
      { amount: 1_000, at: 10_000 },
    ]);
    expect(walkExits(later.cursor, fresh(2_000), caps, 300)).toMatchObject({
      taken: [later.planned[0]],
      forcedAt: 160,
    });
    expect(later.rest().map((e) => e.bet.id)).toEqual(['b1']);
  });

  it('counts what the round paid before the walk (cash-outs by hand), the per-bet cap on what an exit is paid', () => {
    // 1,500 of a 3,000 cap already paid: 1,000 still in reaches it at 1.50x.
    const caps = { perBet: NO_BET_CAP, perRound: 3_000 };
    expect(walkExits(list([{ amount: 1_000, at: 10_000 }]).cursor, { open: 1_000, paid: 1_500 }, caps, 200)).toEqual({
      taken: [],
      forcedAt: 150,
      exposure: { open: 1_000, paid: 1_500 },
    });
    // Spent already (a cash-out by hand past the point): the lowest point a cash-out has.
    expect(roundForcePoint({ open: 1_000, paid: 3_200 }, 3_000)).toBe(101);
    // An exit at 5.00x whose bet's payout is capped at 1,200 leaves 1,200 paid, not 2,500: the other
    // 1,000 then reaches the 10,000 cap at 8.80x (not 7.50x).
    const capped = list([
      { amount: 500, at: 500 },
      { amount: 1_000, at: 10_000 },
    ]);
    const walk = walkExits(capped.cursor, fresh(1_500), { perBet: 1_200, perRound: 10_000 }, 10_000);
    expect(walk.exposure).toEqual({ open: 1_000, paid: 1_200 });
    expect(walk.forcedAt).toBe(880);
  });

  it('forces everyone still in at the force point, an exit at exactly that point included', () => {
    const tied = list([
      { amount: 1_000, at: 150 },
      { amount: 1_000, at: 150 },
    ]);
    expect(walkExits(tied.cursor, fresh(2_000), { perBet: NO_BET_CAP, perRound: 3_000 }, 151)).toMatchObject({
      taken: [],
      forcedAt: 150,
    });
    expect(tied.rest()).toHaveLength(2);
    // Not reached yet by 1.49x: nothing leaves.
    expect(
      walkExits(
        list([{ amount: 2_000, at: 10_000 }]).cursor,
        fresh(2_000),
        { perBet: NO_BET_CAP, perRound: 3_000 },
        149,
      ),
    ).toMatchObject({
      taken: [],
      forcedAt: null,
    });
    expect(roundForcePoint(fresh(0), 3_000)).toBe(Number.POSITIVE_INFINITY);
  });
});
