import { describe, expect, it } from 'vitest';
import { DEFAULT_OPERATOR_SETTINGS } from '../operators/operator';
import { betVelocity, largePayout, largeStake, machineTiming, sessionPlaces, type ComplianceSettings } from './rules';

const c: ComplianceSettings = {
  ...DEFAULT_OPERATOR_SETTINGS.compliance,
  large_stake: 1000,
  large_payout: 5000,
  bets_per_minute_per_player: 3,
  machine_timing_window_ms: 15,
  machine_timing_streak: 4,
};

describe('compliance rules', () => {
  it('large stake: at or above the threshold; 0 switches it off', () => {
    expect(largeStake(999, c)).toBeNull();
    expect(largeStake(1000, c)).toEqual({ amount: 1000, threshold: 1000 });
    expect(largeStake(10 ** 9, { ...c, large_stake: 0 })).toBeNull();
  });

  it('large payout ignores voids (the stake coming back)', () => {
    expect(largePayout('cashed_out', 5000, c)).toEqual({ payout: 5000, threshold: 5000 });
    expect(largePayout('void', 9000, c)).toBeNull();
    expect(largePayout('lost', 0, c)).toBeNull();
  });

  it('velocity: more bets in the minute than allowed', () => {
    expect(betVelocity(3, c)).toBeNull();
    expect(betVelocity(4, c)).toEqual({ bets_in_last_minute: 4, threshold: 3, window_ms: 60_000 });
  });

  it('machine timing: the newest streak within the window, not older cash-outs', () => {
    const at = (...ms: number[]) => ms.map((elapsedMs, i) => ({ betId: `b${i}`, elapsedMs }));
    expect(machineTiming(at(1500, 1510, 1495, 1509), c)).toEqual({
      streak: 4,
      window_ms: 15,
      spread_ms: 15,
      elapsed_ms: [1500, 1510, 1495, 1509],
      bet_ids: ['b0', 'b1', 'b2', 'b3'],
    });
    expect(machineTiming(at(1500, 1510, 1494, 1509), c)).toBeNull();
    expect(machineTiming(at(1500, 1501, 1502), c)).toBeNull();
    // Only the newest `streak` count: a human-like fifth one further back does not matter.
    expect(machineTiming(at(800, 801, 802, 803, 4000), c)).toMatchObject({
      spread_ms: 3,
      bet_ids: ['b0', 'b1', 'b2', 'b3'],
    });
  });

  it('session places: more distinct places than allowed (one by default)', () => {
    expect(sessionPlaces(1, c)).toBeNull();
    expect(sessionPlaces(2, c)).toEqual({ places: 2, threshold: 1, window_ms: 600_000 });
    expect(sessionPlaces(3, { ...c, max_session_places: 3 })).toBeNull();
  });
});
