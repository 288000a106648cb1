import { describe, expect, it } from 'vitest';
import type { ActiveCrashBet } from '../../bets/bet';
import { toBet } from '../../bets/bet-repository';
import { crashRow } from '../../../test/support/bet-rows';
import { cashedOutBet } from './crash-rules';

// Read through the repository, as every cash-out path gets its bet: whatever fields a bet row maps to.
const active = toBet(crashRow()) as ActiveCrashBet;

describe('cashedOutBet', () => {
  it('keeps every field of the active bet, in order, and adds the result', () => {
    const settled = cashedOutBet(active, 250, 'manual', 1_000_000, 2_000);
    // What `{ ...bet, status, … }` would build: a field added to bets later must not be lost here.
    const spread = {
      ...active,
      status: 'cashed_out',
      payout: 250,
      cashoutMultiplier: 250,
      cashoutKind: 'manual',
      settledAt: 2_000,
    };
    expect(Object.entries(settled)).toEqual(Object.entries(spread));
  });

  it('pays floor(amount × multiplier), capped at the per-bet maximum', () => {
    expect(cashedOutBet({ ...active, amount: 333 }, 150, 'auto', 1_000_000, 2_000).payout).toBe(499);
    expect(cashedOutBet(active, 1_000, 'forced', 500, 2_000)).toMatchObject({ payout: 500, cashoutKind: 'forced' });
  });
});
