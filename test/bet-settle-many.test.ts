/**
 * betRepository.settleMany, which an engine tick uses to pay its due auto cash-outs in one statement:
 * on both stores, each bet still in play is settled with exactly its own result, a bet something else
 * settled first is left as it is and not reported, and a repeat settles nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ActiveCrashBet } from '../src/bets/bet';
import { betRepository } from '../src/bets/bet-repository';
import type { Database } from '../src/store/database';
import { activeCrashBet, insertOperatorRow, insertRound } from './support/bet-rows';
import { freshDatabase, STORES } from './support/harness';

describe.each(STORES)('settling many bets in one statement (%s)', (kind) => {
  let db: Database;
  let dispose: () => Promise<void>;
  let bets: ActiveCrashBet[];

  beforeEach(async () => {
    ({ db, dispose } = await freshDatabase(kind));
    await insertOperatorRow(db, 'op_1');
    const round = await insertRound(db, 'crash', { chainId: 'c', openedAt: 1_000 });
    bets = [1, 2, 3].map((n) =>
      activeCrashBet(round, { id: `bet_${n}`, player: `p${n}`, amount: 100 * n, autoCashout: 150 * n }),
    );
    await db.transaction(async (tx) => {
      for (const bet of bets) await betRepository.insert(tx, bet);
    });
  });
  afterEach(async () => dispose());

  it('settles each open bet with its own result and skips one already settled', async () => {
    // A manual cash-out took bet_2 first.
    await db.transaction((tx) =>
      betRepository.settle(
        tx,
        { id: 'bet_2', status: 'active' },
        { status: 'cashed_out', payout: 220, multiplier: 110, kind: 'manual', at: 2_500 },
      ),
    );
    const results = bets.map((b) => ({
      id: b.id,
      status: 'cashed_out' as const,
      payout: (b.amount * b.autoCashout!) / 100,
      multiplier: b.autoCashout,
      kind: 'auto' as const,
      at: 3_000,
    }));
    const won = await db.transaction((tx) => betRepository.settleMany(tx, 'active', results));
    expect([...won].sort()).toEqual(['bet_1', 'bet_3']);

    const b1 = await betRepository.byId(db, 'bet_1');
    const b2 = await betRepository.byId(db, 'bet_2');
    const b3 = await betRepository.byId(db, 'bet_3');
    expect(b1).toMatchObject({
      status: 'cashed_out',
      payout: 150,
      cashoutMultiplier: 150,
      cashoutKind: 'auto',
      settledAt: 3_000,
    });
    expect(b2).toMatchObject({
      status: 'cashed_out',
      payout: 220,
      cashoutMultiplier: 110,
      cashoutKind: 'manual',
      settledAt: 2_500,
    });
    expect(b3).toMatchObject({
      status: 'cashed_out',
      payout: 1350,
      cashoutMultiplier: 450,
      cashoutKind: 'auto',
      settledAt: 3_000,
    });

    const again = await db.transaction((tx) => betRepository.settleMany(tx, 'active', results));
    expect(again.size).toBe(0);
    expect(await betRepository.byId(db, 'bet_1')).toEqual(b1);
  });

  it('settles a loss with no multiplier or kind, and takes an empty list without a statement', async () => {
    const lost = [{ id: 'bet_1', status: 'lost' as const, payout: 0, multiplier: null, kind: null, at: 4_000 }];
    expect([...(await db.transaction((tx) => betRepository.settleMany(tx, 'active', lost)))]).toEqual(['bet_1']);
    expect(await betRepository.byId(db, 'bet_1')).toMatchObject({ status: 'lost', payout: 0, cashoutMultiplier: null });
    expect((await db.transaction((tx) => betRepository.settleMany(tx, 'active', []))).size).toBe(0);
  });
});
