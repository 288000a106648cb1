import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type ActiveCrashBet,
  type Bet,
  type CashedOutCrashBet,
  type CashoutKind,
  type CrashBet,
  isCrashBet,
  isSettled,
  type ReservedStockRaceBet,
  resultOf,
} from './bet';
import { betSettledEvent } from './bet-events';

// The `@ts-expect-error` lines are the assertions that matter here: `tsc --noEmit` fails if one of
// them stops being an error, i.e. if the types let through what they are meant to refuse.

const active: ActiveCrashBet = {
  id: 'bet_1',
  operatorId: 'op_1',
  game: 'crash',
  roundId: 'rnd_1',
  roundNumber: 7,
  player: 'p1',
  sessionId: null,
  currency: null,
  amount: 100,
  autoCashout: null,
  selections: null,
  status: 'active',
  potentialPayout: null,
  placedAt: 1_000,
};

const reserved: ReservedStockRaceBet = {
  ...active,
  game: 'stock_race',
  sessionId: 'ses_1',
  currency: 'EUR',
  selections: ['NVDA'],
  autoCashout: null,
  status: 'reserved',
};

describe('bet types', () => {
  it('give an active bet no result to read, and a cashed-out bet all of it', () => {
    // @ts-expect-error an active bet has no payout yet
    const payout = active.payout;
    expect(payout).toBeUndefined();
    // @ts-expect-error nor a settlement time
    expect(active.settledAt).toBeUndefined();

    const cashed: CashedOutCrashBet = {
      ...active,
      status: 'cashed_out',
      payout: 250,
      cashoutMultiplier: 250,
      cashoutKind: 'manual',
      settledAt: 2_000,
    };
    expectTypeOf(cashed.payout).toEqualTypeOf<number>();
    expectTypeOf(cashed.cashoutMultiplier).toEqualTypeOf<number>();
    expectTypeOf(cashed.cashoutKind).toEqualTypeOf<CashoutKind>();
    // @ts-expect-error a cashed-out bet always has its multiplier
    const missing: CashedOutCrashBet = { ...cashed, cashoutMultiplier: null };
    expect(missing.status).toBe('cashed_out');
  });

  it('narrow a bet by its status to the fields that status has', () => {
    const bets: Bet[] = [
      active,
      reserved,
      { ...reserved, status: 'won', payout: 190, cashoutMultiplier: null, cashoutKind: null, settledAt: 2_000 },
    ];
    const payouts = bets.map((b) => (isSettled(b) ? b.payout : 'open'));
    expect(payouts).toEqual(['open', 'open', 190]);
    expect(bets.map((b) => resultOf(b).payout)).toEqual([null, null, 190]);
  });

  it('refuse a Stock Race bet where a Crash bet is required', () => {
    // @ts-expect-error a Stock Race bet is not a Crash bet
    const crash: CrashBet = reserved;
    expect(isCrashBet(crash)).toBe(false);
    // @ts-expect-error nor a Crash bet still in play
    const cashable: ActiveCrashBet = reserved;
    expect(cashable.status).toBe('reserved');
  });

  it('give a Stock Race bet its session, currency and selections, and a Crash bet none', () => {
    expectTypeOf(reserved.currency).toEqualTypeOf<string>();
    expectTypeOf(reserved.selections).toEqualTypeOf<string[]>();
    expectTypeOf(active.currency).toEqualTypeOf<null>();
    // @ts-expect-error a Crash bet has no currency
    const priced: ActiveCrashBet = { ...active, currency: 'EUR' };
    expect(priced.currency).toBe('EUR');
  });

  it('build a bet.settled event only from a settled bet', () => {
    // @ts-expect-error an active bet has no result to publish; the builder also refuses it at run time
    expect(() => betSettledEvent(active)).toThrow('needs a settled bet');
  });
});
