import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_OPERATOR_SETTINGS, type Operator } from '../operators/operator';
import type { Database } from '../store/database';
import { freshDatabase, STORES, testConfig } from '../../test/support/harness';
import { betRepository } from '../bets/bet-repository';
import { money } from '../money/currency';
import { OperatorReports } from './operator-reports';

const operator: Operator = {
  id: 'op_stats',
  name: 'Stats',
  apiKey: 'pk_stats',
  walletUrl: null,
  settlesToWallet: false,
  status: 'active',
  mode: 'live',
  settings: { ...DEFAULT_OPERATOR_SETTINGS, stock_race: { ...DEFAULT_OPERATOR_SETTINGS.stock_race, rtp_bp: 9500 } },
  createdAt: 0,
  previousSecretExpiresAt: null,
};

describe.each(STORES)('operator reports (the dashboard read models) on %s', (store) => {
  let db: Database;
  let dispose: () => Promise<void>;

  async function round(id: string, game: string, n: number, status: string, outcome: unknown): Promise<void> {
    await db.run(
      // A closed round has run and closed: the repository refuses a row that says otherwise.
      `INSERT INTO rounds (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at,
         betting_closes_at, running_at, ends_at, closed_at, outcome, settings)
       VALUES (?, ?, ?, ?, 'h', 's', 'c', ?, ?, ?, ?, ?, ?, ?, '{}')`,
      [
        id,
        game,
        n,
        status,
        n,
        n * 1000,
        n * 1000 + 500,
        status === 'closed' ? n * 1000 + 500 : null,
        status === 'closed' ? n * 1000 + 900 : null,
        status === 'closed' ? n * 1000 + 900 : null,
        outcome === null ? null : JSON.stringify(outcome),
      ],
    );
  }
  let seq = 0;
  async function bet(
    roundId: string,
    game: string,
    n: number,
    currency: string | null,
    amount: number,
    status: string,
    payout: number | null,
    op = operator.id,
  ): Promise<void> {
    await db.run(
      `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, currency, amount,
         status, payout, placed_at)
       VALUES (?, ?, ?, ?, ?, 'p', ?, ?, ?, ?, ?)`,
      [`bet_${seq++}`, op, game, roundId, n, currency, amount, status, payout, seq],
    );
  }

  beforeAll(async () => {
    const fresh = await freshDatabase(store);
    db = fresh.db;
    dispose = fresh.dispose;
    for (const id of [operator.id, 'op_other']) {
      await db.run(
        `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
         VALUES (?, 'x', ?, 'x', 'active', '{}', 0, 0)`,
        [id, `pk_${id}`],
      );
    }
    await round('c1', 'crash', 1, 'closed', { crash_point: 150 });
    await round('c2', 'crash', 2, 'closed', { crash_point: 1000 });
    await round('c3', 'crash', 3, 'running', null);
    await round('s1', 'stock_race', 1, 'closed', { moves: [], winner: 'AAPL', winner_pct_bp: 120 });
    await bet('c1', 'crash', 1, null, 100, 'cashed_out', 150);
    await bet('c1', 'crash', 1, null, 100, 'lost', 0);
    await bet('c2', 'crash', 2, null, 200, 'lost', 0);
    await bet('c2', 'crash', 2, null, 999, 'void', 999);
    await bet('c3', 'crash', 3, null, 500, 'active', null);
    await bet('c1', 'crash', 1, null, 700, 'cashed_out', 7000, 'op_other');
    await bet('s1', 'stock_race', 1, 'EUR', 1000, 'won', 1900);
    await bet('s1', 'stock_race', 1, 'EUR', 1000, 'lost', 0);
    await bet('s1', 'stock_race', 1, 'USD', 500, 'won', 950);
  });
  afterAll(async () => dispose?.());

  it('measures RTP from settled, non-void bets of this operator only, per game and currency', async () => {
    const stats = await new OperatorReports(db, testConfig(), { now: () => 0 }).liveStats(operator);
    expect(stats.crash_points).toEqual([
      { round_number: 1, crash_point: 1.5 },
      { round_number: 2, crash_point: 10 },
    ]);
    expect(stats.totals).toEqual([
      {
        game: 'crash',
        currency: null,
        bets: 3,
        staked: '400',
        paid: '150',
        rtp: 37.5,
        staked_text: '400',
        paid_text: '150',
      },
      {
        game: 'stock_race',
        currency: 'EUR',
        bets: 2,
        staked: '2000',
        paid: '1900',
        rtp: 95,
        staked_text: '20.00 EUR',
        paid_text: '19.00 EUR',
      },
      {
        game: 'stock_race',
        currency: 'USD',
        bets: 1,
        staked: '500',
        paid: '950',
        rtp: 190,
        staked_text: '5.00 USD',
        paid_text: '9.50 USD',
      },
    ]);
    // Cumulative per round; Stock Race follows the currency with the most bets.
    expect(stats.rtp).toEqual([
      {
        game: 'crash',
        currency: null,
        configured: 99,
        points: [
          { round_number: 1, rtp: 75 },
          { round_number: 2, rtp: 37.5 },
        ],
      },
      { game: 'stock_race', currency: 'EUR', configured: 95, points: [{ round_number: 1, rtp: 95 }] },
    ]);
  });

  it("counts this operator's bets per round and what needs attention", async () => {
    const counts = await betRepository.countsByRound(db, operator.id, ['c1', 'c2', 's1', 'nope']);
    expect(Object.fromEntries(counts)).toEqual({ c1: 2, c2: 2, s1: 3 });
    const overview = await new OperatorReports(db, testConfig(), { now: () => 0 }).overview(operator.id);
    expect(overview).toEqual({ pendingSettlements: 0, deadDeliveries: 0, openFlagsLastDay: 0, endpoints: 0 });
  });

  it("shows money in the bet's currency, exactly", () => {
    expect(money({ currency: 'EUR' }, 1905)).toBe('19.05 EUR');
    expect(money({ currency: 'JPY' }, 1905)).toBe('1905 JPY');
    expect(money({ currency: null }, 250)).toBe('250');
    expect(money({ currency: 'EUR' }, null)).toBe('–');
  });
});
