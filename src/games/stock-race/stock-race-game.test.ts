import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { betRepository } from '../../bets/bet-repository';
import { reserveStockRaceBet } from './stock-race-bets';
import { FakeClock } from '../../clock/clock';
import type { BetContext } from '../../bets/bet-context';
import type { Operator } from '../../operators/operator';
import type { OperatorService } from '../../operators/operators';
import type { OpenRound, RunningRound } from '../engine/round';
import { roundRepository } from '../engine/round-repository';
import type { SessionService } from '../../sessions/session-service';
import type { SqliteDatabase } from '../../store/sqlite';
import { settlementRepository } from '../../wallet/settlement-repository';
import type { StockRaceGame } from './stock-race-game';
import { stockRaceWorld } from '../../../test/support/stock-race-world';

// sha256("surface-b-test-0"): NVDA wins at +8.85% (AAPL +7.52, META +8.43, GOOG -3.73, …).
const SEED_NVDA = '75fed4db566aa59dc746e89f1a940794d6ac7af868d356f9f13608cabc3c62b1';

describe('StockRaceGame settling a round', () => {
  let db: SqliteDatabase;
  let clock: FakeClock;
  let operators: OperatorService;
  let sessions: SessionService;
  let game: StockRaceGame;
  /** How the test's own reservations are written: no compliance rules, this test's modes. */
  let writes: BetContext;
  let round: OpenRound;
  const runningFrom = (at: number): RunningRound => ({ ...round, status: 'running', runningAt: at, endsAt: at + 2000 });

  beforeEach(async () => {
    clock = new FakeClock(1_800_000_000_000);
    // wallet.test never resolves here, and nothing in this file calls the wallet.
    ({ db, operators, sessions, writes, game } = await stockRaceWorld(clock));
    round = await db.transaction((tx) =>
      roundRepository.insert(tx, {
        game: 'stock_race',
        seedHash: 'h',
        seed: SEED_NVDA,
        chainId: 'c',
        chainIdx: 0,
        openedAt: clock.now(),
        bettingClosesAt: clock.now() + 1000,
        settings: game.roundSettings(),
      }),
    );
  });
  afterEach(async () => db.close());

  async function reserve(operator: Operator, currency: string, selected: string[], stake: number): Promise<string> {
    const { session } = await sessions.launch(operator, {
      playerRef: 'p1',
      currency,
      returnUrl: 'https://op.test/back',
    });
    const r = await db.transaction((tx) =>
      reserveStockRaceBet(
        tx,
        writes,
        operator,
        { sessionId: session.id, roundId: round.id, selectedStocks: selected, stake },
        clock.now(),
      ),
    );
    return r.bet.id;
  }

  it('pays winners by the RTP formula, floors, caps, and queues settle calls only for wallet operators', async () => {
    const wallet = await operators.create({
      name: 'W',
      walletUrl: 'https://wallet.test',
      settings: { currencies: ['EUR', 'JPY'], stock_race: { rtp_bp: 9500, max_payout_major: 5000 } },
    });
    const plain = await operators.create({ name: 'N' });
    const pair = await reserve(wallet, 'EUR', ['NVDA', 'AAPL'], 10);
    const loser = await reserve(wallet, 'EUR', ['GOOG'], 10);
    const capped = await reserve(wallet, 'EUR', ['NVDA'], 1000);
    const yen = await reserve(wallet, 'JPY', ['NVDA', 'META', 'AAPL'], 1000);
    const noWallet = await reserve(plain, 'EUR', ['NVDA'], 10);

    const { outcome, events } = await db.transaction((tx) => game.close(tx, runningFrom(clock.now()), clock.now()));
    expect(outcome).toMatchObject({ winner: 'NVDA', winner_pct_bp: 885 });

    const bets = Object.fromEntries(
      await Promise.all([pair, loser, capped, yen, noWallet].map(async (id) => [id, await betRepository.byId(db, id)])),
    );
    // 1000 × 8 × 9500 / (2 × 10000) = 3800 cents; 1 of 8 → 7600.
    expect(bets[pair]).toMatchObject({ status: 'won', payout: 3800 });
    expect(bets[loser]).toMatchObject({ status: 'lost', payout: 0 });
    // 100000 × 8 × 0.95 = 760000 cents, capped at 5000.00 EUR.
    expect(bets[capped]).toMatchObject({ status: 'won', payout: 500_000 });
    // 1000 × 8 × 9500 / (3 × 10000) = 2533.33… → 2533 yen (no minor unit).
    expect(bets[yen]).toMatchObject({ status: 'won', payout: 2533 });
    expect(bets[noWallet]).toMatchObject({ status: 'won', payout: 7600 });

    expect(events).toHaveLength(5);
    const settledPair = events.find((e) => e.type === 'bet.settled' && e.data.bet_id === pair);
    expect(settledPair?.data).toMatchObject({ status: 'won', payout: 38, amount: 10, winner: 'NVDA', pct: 8.85 });

    const rows = await settlementRepository.list(db, { limit: 10 });
    expect(rows.map((r) => r.betId).sort()).toEqual([pair, loser, capped, yen].sort());
    const body = (id: string) => JSON.parse(rows.find((r) => r.betId === id)!.body);
    expect(body(pair)).toEqual({
      bet_id: pair,
      winner: 'NVDA',
      pct: 8.85,
      payout: 38,
      idempotency_key: `settle_${pair}`,
    });
    expect(body(loser)).toEqual({
      bet_id: loser,
      winner: 'NVDA',
      pct: 8.85,
      payout: 0,
      idempotency_key: `settle_${loser}`,
    });
    expect(body(capped).payout).toBe(5000);
    expect(body(yen).payout).toBe(2533);
    expect(rows.every((r) => r.status === 'pending' && r.nextAttemptAt === clock.now())).toBe(true);

    // A second close finds nothing reserved: nothing is paid or queued twice.
    const again = await db.transaction((tx) => game.close(tx, runningFrom(clock.now()), clock.now()));
    expect(again.events).toHaveLength(0);
    expect(await settlementRepository.list(db, { limit: 10 })).toHaveLength(4);
  });

  it('voids every reserved bet with payout = stake and a settle call with no winner', async () => {
    const wallet = await operators.create({ name: 'W', walletUrl: 'https://wallet.test' });
    const id = await reserve(wallet, 'EUR', ['TSLA', 'MSFT'], 12.34);
    const events = await db.transaction((tx) => game.voidBets(tx, round, clock.now()));
    expect(await betRepository.byId(db, id)).toMatchObject({ status: 'void', payout: 1234 });
    expect(events[0]!.data).toMatchObject({ status: 'void', payout: 12.34, winner: null, pct: null });
    const row = await settlementRepository.byBet(db, id);
    expect(JSON.parse(row!.body)).toEqual({
      bet_id: id,
      winner: null,
      pct: null,
      payout: 12.34,
      idempotency_key: `settle_${id}`,
    });
  });

  it('publishes race frames only while running, ending exactly on the outcome', () => {
    expect(game.frame(round, clock.now())).toBeNull();
    const running = runningFrom(clock.now());
    const half = game.frame(running, clock.now() + 1000)!;
    expect(half.progress_permille).toBe(500);
    const end = game.frame(running, clock.now() + 5000)!;
    expect(end.progress_permille).toBe(1000);
    expect(end.stocks.find((s) => s.symbol === 'NVDA')!.pct).toBe(8.85);
    expect(end.stocks.find((s) => s.symbol === 'GOOG')!.pct).toBe(-3.73);
  });
});
