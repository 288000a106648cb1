import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from 'vitest';
import { migrate } from '../../store/migrate';
import { SqliteDatabase } from '../../store/sqlite';
import {
  type ClosedRound,
  type CrashOutcome,
  closedWith,
  crashOutcomeOf,
  type StockRaceOutcome,
  stockRaceOutcomeOf,
} from './round';
import { RoundRowMisfit, type RoundRow, roundRepository, toRound } from './round-repository';

const row = (over: Partial<RoundRow> = {}): RoundRow => ({
  id: 'rnd_1',
  game: 'crash',
  round_number: 7,
  status: 'open',
  seed_hash: 'h',
  seed: 's',
  chain_id: 'c',
  chain_idx: 0,
  opened_at: 1_000,
  betting_closes_at: 2_000,
  running_at: null,
  ends_at: null,
  heartbeat_at: null,
  closed_at: null,
  voided_at: null,
  void_reason: null,
  outcome: null,
  settings: '{}',
  operator_id: null,
  scripted: 0,
  ...over,
});

const race: StockRaceOutcome = { moves: [{ symbol: 'NVDA', pct_bp: 885 }], winner: 'NVDA', winner_pct_bp: 885 };
const ran = { running_at: 2_000, ends_at: 3_000 };
const closed = { ...ran, status: 'closed', closed_at: 3_000 } as const;

describe('a round row becomes the round type its state and game say', () => {
  it('maps each well-formed row, the outcome typed by its game', () => {
    expect(toRound(row())).toMatchObject({ status: 'open', runningAt: null, outcome: null });
    expect(toRound(row({ ...ran, status: 'running', heartbeat_at: 2_500 }))).toMatchObject({
      runningAt: 2_000,
      heartbeatAt: 2_500,
    });
    const crash = toRound(row({ ...closed, outcome: '{"crash_point":250}' }));
    expect(crash.status === 'closed' && crashOutcomeOf(crash)).toEqual({ crash_point: 250 });
    const stock = toRound(row({ ...closed, game: 'stock_race', outcome: JSON.stringify(race) }));
    expect(stock.status === 'closed' && stockRaceOutcomeOf(stock)).toEqual(race);
    expect(toRound(row({ status: 'void', voided_at: 1_500, void_reason: 'ops' }))).toMatchObject({
      voidedAt: 1_500,
      runningAt: null,
    });
    expect(toRound(row({ ...ran, status: 'void', voided_at: 2_500, void_reason: 'ops' }))).toMatchObject({
      runningAt: 2_000,
    });
  });

  it.each([
    ['an open round with a start time', row({ running_at: 2_000 })],
    ['a running round without its end', row({ status: 'running', running_at: 2_000 })],
    ['a running round with an outcome', row({ ...ran, status: 'running', outcome: '{"crash_point":250}' })],
    ['a closed round without an outcome', row(closed)],
    ['a closed round without its close time', row({ ...closed, closed_at: null, outcome: '{"crash_point":250}' })],
    ['a closed Crash round with a race result', row({ ...closed, outcome: JSON.stringify(race) })],
    ['a closed race with a crash point', row({ ...closed, game: 'stock_race', outcome: '{"crash_point":250}' })],
    ['a void round without a reason', row({ status: 'void', voided_at: 1_500 })],
    ['a round in no known state', row({ status: 'paused' as 'open' })],
  ])('refuses %s', (_what, r) => {
    expect(() => toRound(r)).toThrow(RoundRowMisfit);
  });

  it('reads a stored row that does not fit as an error, not as a round', async () => {
    const db = new SqliteDatabase({ filename: ':memory:' });
    try {
      await migrate(db);
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
      expect(await roundRepository.byId(db, round.id)).toEqual(round);
      await db.run(`UPDATE rounds SET status = 'closed', closed_at = 3000 WHERE id = ?`, [round.id]);
      await expect(roundRepository.byId(db, round.id)).rejects.toThrow(RoundRowMisfit);
    } finally {
      await db.close();
    }
  });
});

describe('round types', () => {
  const open = toRound(row());
  const running = toRound(row({ ...ran, status: 'running' }));

  it('give a running round its times and a closed round its outcome', () => {
    if (running.status !== 'running') throw new Error('the row is a running round');
    expectTypeOf(running.runningAt).toEqualTypeOf<number>();
    expectTypeOf(running.endsAt).toEqualTypeOf<number>();
    // @ts-expect-error a running round has no close time
    const closedAt: number = running.closedAt;
    expect(closedAt).toBeNull();

    const done: ClosedRound = closedWith(running, 3_000, { crash_point: 250 });
    if (done.game !== 'crash') throw new Error('a Crash round stays a Crash round');
    expectTypeOf(done.outcome).toEqualTypeOf<CrashOutcome>();
    expectTypeOf(done.closedAt).toEqualTypeOf<number>();
  });

  it('refuse an outcome of the other game', () => {
    if (running.status !== 'running' || open.status !== 'open') throw new Error('rows as built above');
    expect(() => closedWith(running, 3_000, race)).toThrow('cannot close with the outcome');
    const done = closedWith(running, 3_000, { crash_point: 250 });
    expect(() => stockRaceOutcomeOf(done)).toThrow('not a Stock Race round');
    // @ts-expect-error an open round has no outcome to read
    const outcome: CrashOutcome = open.outcome;
    expect(outcome).toBeNull();
    // @ts-expect-error only a running round can be closed
    const closeUnrun = () => closedWith(open, 3_000, { crash_point: 250 });
    expectTypeOf(closeUnrun).returns.toEqualTypeOf<ClosedRound>();
  });
});
