import type { BetRow } from '../../src/bets/bet-repository';

/** An active Crash bet as the store holds it; `over` changes any column. */
export const crashRow = (over: Partial<BetRow> = {}): BetRow => ({
  id: 'bet_1',
  operator_id: 'op_1',
  game: 'crash',
  round_id: 'rnd_1',
  round_number: 7,
  player: 'p1',
  session_id: null,
  currency: null,
  amount: 100,
  auto_cashout: 250,
  selections: null,
  status: 'active',
  payout: null,
  cashout_multiplier: null,
  cashout_kind: null,
  placed_at: 1_000,
  settled_at: null,
  potential_payout: null,
  ...over,
});
