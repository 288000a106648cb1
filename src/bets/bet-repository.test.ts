import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { roundRepository } from '../games/engine/round-repository';
import { migrate } from '../store/migrate';
import { SqliteDatabase } from '../store/sqlite';
import type { ActiveCrashBet } from './bet';
import { crashRow } from '../../test/support/bet-rows';
import { BetRowMisfit, type BetRow, betRepository, toBet } from './bet-repository';

const raceRow = (over: Partial<BetRow> = {}): BetRow =>
  crashRow({
    game: 'stock_race',
    session_id: 'ses_1',
    currency: 'EUR',
    auto_cashout: null,
    selections: '["NVDA","AAPL"]',
    status: 'reserved',
    potential_payout: 1900,
    ...over,
  });

const cashedOut = {
  status: 'cashed_out',
  payout: 250,
  cashout_multiplier: 250,
  cashout_kind: 'auto',
  settled_at: 2_000,
} as const;

describe('a bet row becomes the bet type its game and status say', () => {
  it('maps each well-formed row to its variant, with exactly the fields that variant has', () => {
    expect(toBet(crashRow())).toEqual({
      id: 'bet_1',
      operatorId: 'op_1',
      game: 'crash',
      roundId: 'rnd_1',
      roundNumber: 7,
      player: 'p1',
      sessionId: null,
      currency: null,
      amount: 100,
      autoCashout: 250,
      selections: null,
      status: 'active',
      placedAt: 1_000,
      potentialPayout: null,
    });
    expect(toBet(crashRow(cashedOut))).toMatchObject({
      status: 'cashed_out',
      payout: 250,
      cashoutMultiplier: 250,
      cashoutKind: 'auto',
      settledAt: 2_000,
    });
    expect(toBet(crashRow({ status: 'lost', payout: 0, settled_at: 2_000 }))).toMatchObject({
      status: 'lost',
      payout: 0,
      cashoutMultiplier: null,
      cashoutKind: null,
    });
    expect(toBet(raceRow())).toMatchObject({
      game: 'stock_race',
      sessionId: 'ses_1',
      selections: ['NVDA', 'AAPL'],
      potentialPayout: 1900,
    });
    // PostgreSQL hands a bigint back as text; a bet reserved before quotes were stored has none.
    expect(toBet(raceRow({ potential_payout: '1900' as never })).potentialPayout).toBe(1900);
    expect(toBet(raceRow({ potential_payout: null })).potentialPayout).toBeNull();
    // A Crash bet's potential payout is the per-bet cap it was placed under (null before caps were stored).
    expect(toBet(crashRow({ potential_payout: '50000' as never })).potentialPayout).toBe(50_000);
    expect(toBet(crashRow({ potential_payout: null })).potentialPayout).toBeNull();
    expect(toBet(raceRow({ status: 'won', payout: 1900, settled_at: 2_000 }))).toMatchObject({
      status: 'won',
      payout: 1900,
    });
  });

  it.each([
    ['an active bet with a payout', crashRow({ payout: 0 })],
    ['an active bet with a settlement time', crashRow({ settled_at: 2_000 })],
    ['a cash-out without a multiplier', crashRow({ ...cashedOut, cashout_multiplier: null })],
    ['a cash-out without a kind', crashRow({ ...cashedOut, cashout_kind: null })],
    ['a cash-out of an unknown kind', crashRow({ ...cashedOut, cashout_kind: 'magic' as 'auto' })],
    ['a lost bet without a payout', crashRow({ status: 'lost', settled_at: 2_000 })],
    [
      'a lost bet with a cash-out multiplier',
      crashRow({ status: 'lost', payout: 0, settled_at: 2_000, cashout_multiplier: 150 }),
    ],
    ['a Crash bet with a currency', crashRow({ currency: 'EUR' })],
    ['a Crash bet with a Stock Race status', crashRow({ status: 'reserved' })],
    ['a Stock Race bet without a session', raceRow({ session_id: null })],
    ['a Stock Race bet without a currency', raceRow({ currency: null })],
    ['a Stock Race bet without selections', raceRow({ selections: null })],
    ['a Stock Race bet whose selections are not symbols', raceRow({ selections: '[1, 2]' })],
    ['a Stock Race bet with an auto cash-out', raceRow({ auto_cashout: 200 })],
    ['a Stock Race bet with a Crash status', raceRow({ ...cashedOut, cashout_multiplier: null, cashout_kind: null })],
    ['a bet of no known game', crashRow({ game: 'roulette' as 'crash' })],
  ])('refuses %s', (_what, row) => {
    expect(() => toBet(row)).toThrow(BetRowMisfit);
  });
});

describe('betRepository on a store row that does not fit its variant', () => {
  let db: SqliteDatabase;

  beforeEach(async () => {
    db = new SqliteDatabase({ filename: ':memory:' });
    await migrate(db);
  });
  afterEach(async () => db.close());

  it('reads it as an error, not as a bet', async () => {
    await db.run(
      `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
       VALUES ('op_1', 'n', 'k', 'x', 'active', '{}', 1, 1)`,
    );
    const round = await db.transaction((tx) =>
      roundRepository.insert(tx, {
        game: 'crash',
        seedHash: 'h',
        seed: 's',
        chainId: 'c',
        chainIdx: 0,
        openedAt: 1_000,
        bettingClosesAt: 2_000,
        settings: {},
      }),
    );
    const bet: ActiveCrashBet = {
      id: 'bet_1',
      operatorId: 'op_1',
      game: 'crash',
      roundId: round.id,
      roundNumber: round.roundNumber,
      player: 'p1',
      sessionId: null,
      currency: null,
      amount: 100,
      autoCashout: null,
      selections: null,
      status: 'active',
      potentialPayout: null,
      placedAt: 1_500,
    };
    await db.transaction((tx) => betRepository.insert(tx, bet));
    expect(await betRepository.byId(db, bet.id)).toEqual(bet);

    // Something other than the settle path wrote a payout on a bet still in play.
    await db.run(`UPDATE bets SET payout = 500 WHERE id = ?`, [bet.id]);
    await expect(betRepository.byId(db, bet.id)).rejects.toThrow(BetRowMisfit);
    await expect(betRepository.activeCrashBets(db, round.id)).rejects.toThrow('an active bet has no result yet');
  });
});
