import { randomBytes, randomUUID } from 'node:crypto';
import type { ActiveCrashBet } from '../../src/bets/bet';
import type { BetRow } from '../../src/bets/bet-repository';
import type { Game } from '../../src/games/engine/round';
import { roundRepository } from '../../src/games/engine/round-repository';
import type { Database } from '../../src/store/database';

/** Rows the listing tests write straight to the store: rounds and bets of any age, in any state. */

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

/**
 * A Stock Race bet as the store holds it, under `sessionId`: reserved unless `over` says otherwise, with a
 * fresh id and a fixed pick of two stocks.
 */
export const stockRaceRow = (sessionId: string, over: Partial<BetRow> = {}): BetRow => ({
  ...crashRow({ id: randomUUID() }),
  game: 'stock_race',
  session_id: sessionId,
  currency: 'EUR',
  auto_cashout: null,
  selections: JSON.stringify(['NVDA', 'AAPL']),
  status: 'reserved',
  ...over,
});

/**
 * Inserts a round of `game` that opened at `openedAt` (its betting window 10 s long) on a chain named
 * `chainId`, live unless `operatorId` names a sandbox operator. Returns the round's id and number.
 */
export async function insertRound(
  db: Database,
  game: Game,
  { chainId, openedAt, operatorId = null }: { chainId: string; openedAt: number; operatorId?: string | null },
): Promise<{ id: string; number: number }> {
  return db.transaction(async (tx) => {
    const round = await roundRepository.insert(tx, {
      game,
      seedHash: randomBytes(32).toString('hex'),
      seed: randomBytes(32).toString('hex'),
      chainId,
      chainIdx: 0,
      openedAt,
      bettingClosesAt: openedAt + 10_000,
      settings: {},
      operatorId,
    });
    return { id: round.id, number: round.roundNumber };
  });
}

/** A bare operator row `id` (no key or settings worth reading): what a bet row's foreign key needs. */
export async function insertOperatorRow(db: Database, id: string): Promise<void> {
  await db.run(
    `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
     VALUES (?, 'n', ?, 'x', 'active', '{}', 1, 1)`,
    [id, `k_${id}`],
  );
}

/** An active Crash bet of operator op_1 in `round`, as betRepository.insert takes it. */
export const activeCrashBet = (
  round: { id: string; number: number },
  over: Pick<ActiveCrashBet, 'id' | 'player' | 'amount' | 'autoCashout'>,
): ActiveCrashBet => ({
  operatorId: 'op_1',
  game: 'crash',
  roundId: round.id,
  roundNumber: round.number,
  sessionId: null,
  currency: null,
  selections: null,
  status: 'active',
  potentialPayout: null,
  placedAt: 1_500,
  ...over,
});
