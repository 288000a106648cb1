import pino from 'pino';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { betRepository } from '../../bets/bet-repository';
import { cashoutCrashBet, placeCrashBet } from '../crash/crash-bets';
import { FakeClock } from '../../clock/clock';
import type { BetContext } from '../../bets/bet-context';
import { noCompliance } from '../../bets/compliance-hooks';
import { CrashGame } from '../crash/crash-game';
import { defaultEngineStaleMs, engineHeartbeatMs, DEFAULT_BUSTABIT_SALT } from '../../config/game-defaults';
import { elapsedForMultiplier } from '../crash/multiplier';
import { OperatorModes } from '../../operators/operator-mode';
import { OperatorService } from '../../operators/operators';
import { SecretBox } from '../../operators/secret-box';
import { migrate } from '../../store/migrate';
import { SqliteDatabase } from '../../store/sqlite';
import { RoundEngine, type EngineEvent } from './engine';
import { FairChainService } from './fair-chain';
import { roundRepository } from './round-repository';

// bustabit v2 games #1394725 (3.77x) and #1394728 (1.26x): published results, so the test knows
// each round's crash point before it runs.
const SEED_377 = 'b459e199bac1342bf22d7aa6d19180aff35ab69f453d809949aab3e8d5e545aa';
const SEED_126 = 'b2acd37fbdb5509926ab5d7329704c840f8467266c90019682f3b260a029bdba';

const WINDOW = 5_000;
const PAUSE = 1_000;
const TICK = 100;
// A heartbeat every 250 ms; a cash-out needs one at most 1 s old.
const STALE = defaultEngineStaleMs(engineHeartbeatMs(TICK));
const RULES = { salt: DEFAULT_BUSTABIT_SALT, houseEdgeBp: 100, engineStaleMs: STALE };

describe('round engine driving Crash on a fake clock', () => {
  let db: SqliteDatabase;
  let clock: FakeClock;
  let engine: RoundEngine;
  let game: CrashGame;
  let operators: OperatorService;
  let events: EngineEvent[];
  /** How the test's own bets and cash-outs are written: no compliance rules, this test's modes. */
  let writes: BetContext;

  const settle = () => clock.advanceAsync(0);

  async function build(): Promise<void> {
    const logger = pino({ level: 'silent' });
    operators = new OperatorService(db, new SecretBox(randomBytes(32)), clock, 1000);
    const modes = new OperatorModes();
    writes = { compliance: noCompliance, modes };
    game = new CrashGame({
      db,
      logger,
      compliance: noCompliance,
      modes,
      settingsOf: async (id) => (await operators.get(id)).settings,
      bettingWindowMs: WINDOW,
      pauseMs: PAUSE,
      tickMs: TICK,
      salt: DEFAULT_BUSTABIT_SALT,
      houseEdgeBp: 100,
    });
    const chain = new FairChainService(db, () => 10, { clock, logger, autoContribute: true, allowFixtures: true });
    engine = new RoundEngine({ db, clock, driver: game, logger, modes, chain, leaseCheckMs: 60_000 });
    events = [];
    engine.on((e) => events.push(e));
  }

  beforeEach(async () => {
    clock = new FakeClock(1_800_000_000_000);
    db = new SqliteDatabase({ filename: ':memory:' });
    await migrate(db);
    // A known chain: the first round plays SEED_377, the second SEED_126.
    await db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO fair_chains (game, chain_id, idx, hash) VALUES ('crash', 'c1', 0, ?), ('crash', 'c1', 1, ?)`,
        [SEED_377, SEED_126],
      );
      await tx.run(`INSERT INTO fair_chain_cursor (game, chain_id, next_idx, length) VALUES ('crash', 'c1', 0, 2)`);
      // Chosen seeds, not a hash chain: a test fixture played with bustabit's salt.
      await tx.run(
        `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at, salt, salt_fixed_at)
         VALUES ('c1', 'crash', 2, 'fixture', ?, 0, ?, 0)`,
        [SEED_377, DEFAULT_BUSTABIT_SALT],
      );
    });
    await build();
  });

  afterEach(async () => {
    await engine.stop();
    await db.close();
  });

  async function bet(operatorId: string, amount: number, autoCashout: number | null, player = 'p') {
    const op = await operators.get(operatorId);
    return db.transaction((tx) =>
      placeCrashBet(tx, writes, op, { externalUserId: player, amount, autoCashout }, clock.now()),
    );
  }

  it('opens, runs and closes a round, paying auto cash-outs at exactly their target', async () => {
    const op = await operators.create({ name: 'o' });
    await engine.start();
    await settle();
    const round = (await roundRepository.latest(db, 'crash'))!;
    expect(round).toMatchObject({
      roundNumber: 1,
      status: 'open',
      seed: SEED_377,
      bettingClosesAt: clock.now() + WINDOW,
    });
    expect(events.map((e) => e.type)).toEqual(['round.opened']);

    const atTarget = await bet(op.id, 1_000, 377); // exactly the crash point: wins
    const above = await bet(op.id, 1_000, 378); // one step above: loses
    const low = await bet(op.id, 333, 150); // 333 * 1.50 = 499.5 → 499
    const manual = await bet(op.id, 700, null);

    await clock.advanceAsync(WINDOW);
    expect((await roundRepository.byId(db, round.id))!.status).toBe('running');

    // Half-way up the curve a manual cash-out pays floor(700 * m).
    await clock.advanceAsync(elapsedForMultiplier(200));
    const cashed = await db.transaction((tx) => cashoutCrashBet(tx, writes, RULES, op, manual.id, clock.now()));
    expect(cashed).toMatchObject({
      status: 'cashed_out',
      cashoutMultiplier: 200,
      payout: 1_400,
      cashoutKind: 'manual',
    });
    expect(await betRepository.byId(db, low.id)).toMatchObject({
      status: 'cashed_out',
      cashoutMultiplier: 150,
      payout: 499,
      cashoutKind: 'auto',
    });

    await clock.advanceAsync(elapsedForMultiplier(377) - elapsedForMultiplier(200));
    const closed = (await roundRepository.byId(db, round.id))!;
    expect(closed).toMatchObject({ status: 'closed', outcome: { crash_point: 377 } });
    expect(await betRepository.byId(db, atTarget.id)).toMatchObject({
      status: 'cashed_out',
      payout: 3_770,
      cashoutMultiplier: 377,
    });
    expect(await betRepository.byId(db, above.id)).toMatchObject({ status: 'lost', payout: 0 });

    const outbox = await db.all<{ type: string }>('SELECT type FROM events ORDER BY seq');
    expect(outbox.map((e) => e.type).sort()).toEqual([
      'bet.settled',
      'bet.settled',
      'bet.settled',
      'bet.settled',
      'round.closed',
      'round.opened',
    ]);

    // After the pause the next round of the chain opens.
    await clock.advanceAsync(PAUSE);
    expect(await roundRepository.latest(db, 'crash')).toMatchObject({ roundNumber: 2, status: 'open', seed: SEED_126 });
  });

  it("ticks carry the multiplier and the time only: nothing derived from any operator's bets", async () => {
    const op = await operators.create({ name: 'o' });
    await engine.start();
    await settle();
    await bet(op.id, 1_000, 150);
    await clock.advanceAsync(WINDOW);
    await clock.advanceAsync(elapsedForMultiplier(200));
    const ticks = events.flatMap((e) => (e.type === 'round.tick' ? [e.data] : []));
    expect(ticks.length).toBeGreaterThan(10);
    // The feed goes to every operator and player: an auto cash-out paid in a tick must not show in it.
    for (const data of ticks) expect(Object.keys(data).sort()).toEqual(['elapsed_ms', 'multiplier']);
  });

  const cashout = (op: Awaited<ReturnType<OperatorService['get']>>, betId: string) =>
    db.transaction((tx) => cashoutCrashBet(tx, writes, RULES, op, betId, clock.now()));

  it('refuses bets once the betting window has closed', async () => {
    const op = await operators.create({ name: 'o' });
    await engine.start();
    await settle();
    await clock.advanceAsync(WINDOW);
    await expect(bet(op.id, 10, null)).rejects.toMatchObject({ code: 'BETTING_CLOSED' });
  });

  it('refuses a cash-out after the crash even if the engine has not closed the round yet', async () => {
    const op = await operators.create({ name: 'o' });
    await engine.start();
    await settle();
    const b = await bet(op.id, 100, null);
    await clock.advanceAsync(WINDOW);
    // The engine is alive up to just before the crash, then stalls: nobody closes the round.
    await clock.advanceAsync(elapsedForMultiplier(377) - 50);
    await engine.stop();
    clock.advance(100);
    await expect(cashout(op, b.id)).rejects.toMatchObject({ code: 'BET_NOT_ACTIVE' });
  });

  it('pays a cash-out only while the round has a recent heartbeat from its engine', async () => {
    const op = await operators.create({ name: 'o' });
    await engine.start();
    await settle();
    const early = await bet(op.id, 1_000, null, 'early');
    const late = await bet(op.id, 1_000, null, 'late');
    const auto = await bet(op.id, 1_000, 150, 'auto');
    await clock.advanceAsync(WINDOW);
    const round = (await roundRepository.latest(db, 'crash'))!;
    // Every few ticks, not every tick: at 1.40x the last heartbeat is at most one interval old.
    await clock.advanceAsync(elapsedForMultiplier(140));
    const beat = (await roundRepository.byId(db, round.id))!.heartbeatAt!;
    expect(clock.now() - beat).toBeLessThan(engineHeartbeatMs(TICK) + TICK);
    expect(beat).toBeGreaterThan(round.runningAt!);

    // The engine dies: nothing more is written for the round. Within the bound a cash-out is still
    // paid at the curve's value; past it, nothing is, not even an auto target the curve has passed.
    await engine.stop();
    clock.advance(beat + STALE - clock.now());
    const paid = await cashout(op, early.id);
    expect(paid).toMatchObject({ status: 'cashed_out', cashoutKind: 'manual' });
    clock.advance(1);
    for (const id of [late.id, auto.id]) {
      await expect(cashout(op, id)).rejects.toMatchObject({
        code: 'ROUND_INTERRUPTED',
        message: expect.stringMatching(/round 1 is interrupted.*voided and the stake refunded/),
      });
    }
    // An outage of minutes changes nothing: the multiplier the wall clock implies is never paid.
    clock.advance(elapsedForMultiplier(300));
    await expect(cashout(op, late.id)).rejects.toMatchObject({ code: 'ROUND_INTERRUPTED' });
    const unpaid = await betRepository.byId(db, late.id);
    expect(unpaid).toMatchObject({ status: 'active' });
    expect(unpaid).not.toHaveProperty('payout');

    // The next lease holder voids the round and refunds every bet not cashed out, once.
    await build();
    await engine.start();
    expect(await roundRepository.byId(db, round.id)).toMatchObject({ status: 'void' });
    expect(await betRepository.byId(db, late.id)).toMatchObject({ status: 'void', payout: 1_000 });
    expect(await betRepository.byId(db, auto.id)).toMatchObject({ status: 'void', payout: 1_000 });
    expect(await betRepository.byId(db, early.id)).toMatchObject({ status: 'cashed_out', payout: paid.payout });
    const settledEvents = await db.all<{ data: string }>(`SELECT data FROM events WHERE type = 'bet.settled'`);
    expect(settledEvents.map((e) => JSON.parse(e.data).bet_id).sort()).toEqual([early.id, late.id, auto.id].sort());
    await expect(cashout(op, late.id)).rejects.toMatchObject({ code: 'BET_NOT_ACTIVE' });
  });

  it('voids a round found running after a restart and refunds every bet not cashed out, once', async () => {
    const op = await operators.create({ name: 'o' });
    await engine.start();
    await settle();
    const early = await bet(op.id, 500, 110);
    const open = await bet(op.id, 250, null);
    await clock.advanceAsync(WINDOW);
    await clock.advanceAsync(elapsedForMultiplier(120));
    expect(await betRepository.byId(db, early.id)).toMatchObject({ status: 'cashed_out', payout: 550 });
    // The process dies: a new engine (new process) takes over the same store.
    await engine.stop();
    await build();
    await engine.start();
    await settle();
    const rounds = await roundRepository.recent(db, 'crash', 5);
    expect(rounds.map((r) => [r.roundNumber, r.status])).toEqual([[1, 'void']]);
    expect(await betRepository.byId(db, open.id)).toMatchObject({ status: 'void', payout: 250 });
    expect(await betRepository.byId(db, early.id)).toMatchObject({ status: 'cashed_out', payout: 550 });
    const settledEvents = await db.all<{ data: string }>(`SELECT data FROM events WHERE type = 'bet.settled'`);
    expect(settledEvents.map((e) => JSON.parse(e.data).bet_id).sort()).toEqual([early.id, open.id].sort());
    await clock.advanceAsync(PAUSE);
    expect(await roundRepository.latest(db, 'crash')).toMatchObject({ roundNumber: 2, status: 'open' });
  });

  it('resumes the betting window of an open round after a restart', async () => {
    const op = await operators.create({ name: 'o' });
    await engine.start();
    await settle();
    const b = await bet(op.id, 100, 101);
    await clock.advanceAsync(WINDOW / 2);
    await engine.stop();
    await build();
    await engine.start();
    await settle();
    expect(await roundRepository.latest(db, 'crash')).toMatchObject({ roundNumber: 1, status: 'open' });
    await clock.advanceAsync(WINDOW / 2);
    expect(await roundRepository.latest(db, 'crash')).toMatchObject({ status: 'running' });
    await clock.advanceAsync(elapsedForMultiplier(377));
    expect(await betRepository.byId(db, b.id)).toMatchObject({ status: 'cashed_out', payout: 101 });
  });

  it('voids a round another process started running after this one took the lease, instead of leaving it', async () => {
    // A leader that lost its lease just before betting closed still moves the round to running; the new
    // leader, waiting for the same betting close, must not take that for a voided round and walk away.
    const op = await operators.create({ name: 'o' });
    await engine.start();
    await settle();
    const b = await bet(op.id, 300, 250);
    const round = (await roundRepository.latest(db, 'crash'))!;
    await clock.advanceAsync(WINDOW - 100);
    await db.transaction(async (tx) => {
      const at = clock.now();
      await roundRepository.transition(tx, round, 'running', {
        running_at: at,
        ends_at: at + 60_000,
        heartbeat_at: at,
      });
    });
    await clock.advanceAsync(100);
    expect(await roundRepository.byId(db, round.id)).toMatchObject({ status: 'void' });
    expect(await betRepository.byId(db, b.id)).toMatchObject({ status: 'void', payout: 300 });
    await clock.advanceAsync(PAUSE);
    expect(await roundRepository.latest(db, 'crash')).toMatchObject({ roundNumber: 2, status: 'open' });
    expect(events.filter((e) => e.type === 'engine.error')).toEqual([]);
  });

  it('force-cashes a bet at the per-bet payout cap', async () => {
    const op = await operators.create({
      name: 'o',
      settings: { crash: { max_payout_per_bet: 2_000, max_payout_per_round: 100_000_000 } },
    });
    await engine.start();
    await settle();
    const b = await bet(op.id, 1_000, null);
    await clock.advanceAsync(WINDOW);
    await clock.advanceAsync(elapsedForMultiplier(377));
    expect(await betRepository.byId(db, b.id)).toMatchObject({
      status: 'cashed_out',
      cashoutMultiplier: 200,
      payout: 2_000,
      cashoutKind: 'forced',
    });
  });

  it('force-cashes every bet of an operator whose round exposure reaches its cap', async () => {
    const op = await operators.create({
      name: 'o',
      settings: { crash: { max_payout_per_bet: 10_000_000, max_payout_per_round: 3_000 } },
    });
    await engine.start();
    await settle();
    const a = await bet(op.id, 1_000, null, 'a');
    const b = await bet(op.id, 1_000, null, 'b');
    await clock.advanceAsync(WINDOW);
    await clock.advanceAsync(elapsedForMultiplier(377));
    const [ra, rb] = [await betRepository.byId(db, a.id), await betRepository.byId(db, b.id)];
    expect(ra?.status).toBe('cashed_out');
    expect(rb?.status).toBe('cashed_out');
    if (ra?.status !== 'cashed_out') throw new Error(`bet a is ${ra?.status}, not cashed out`);
    expect(ra.cashoutKind).toBe('forced');
    // Exposure 2,000 × m reaches 3,000 at exactly 1.50x: both are paid there, whatever the tick saw.
    expect(ra.cashoutMultiplier).toBe(150);
    expect([ra.payout, rb?.status === 'cashed_out' ? rb.payout : null]).toEqual([1_500, 1_500]);
  });

  it('enforces the state machine: a closed round cannot be reopened or voided', async () => {
    await engine.start();
    await settle();
    await clock.advanceAsync(WINDOW + elapsedForMultiplier(377));
    const round = (await roundRepository.byNumber(db, 'crash', 1))!;
    expect(round.status).toBe('closed');
    await expect(db.transaction((tx) => roundRepository.transition(tx, round, 'running', {}))).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
    });
    await expect(db.transaction((tx) => roundRepository.transition(tx, round, 'void', {}))).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
    });
    // A stale view of the round (still "running") loses against the stored state.
    await expect(
      db.transaction((tx) => roundRepository.transition(tx, { id: round.id, status: 'running' }, 'closed', {})),
    ).rejects.toMatchObject({ code: 'ILLEGAL_TRANSITION' });
  });

  it('goes on to the next round when the open one is voided during its betting window', async () => {
    const op = await operators.create({ name: 'o' });
    await engine.start();
    await settle();
    const b = await bet(op.id, 400, null);
    const round = (await roundRepository.latest(db, 'crash'))!;
    await engine.voidRound(round.id, 'operations');
    expect(await roundRepository.byId(db, round.id)).toMatchObject({ status: 'void', voidReason: 'operations' });
    expect(await betRepository.byId(db, b.id)).toMatchObject({ status: 'void', payout: 400 });
    await clock.advanceAsync(WINDOW + PAUSE);
    expect(await roundRepository.latest(db, 'crash')).toMatchObject({ roundNumber: 2, status: 'open' });
    expect(events.filter((e) => e.type === 'engine.error')).toEqual([]);
  });
});
