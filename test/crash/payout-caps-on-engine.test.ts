import { createHash, randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { BetContext } from '../../src/bets/bet-context';
import { betRepository } from '../../src/bets/bet-repository';
import { noCompliance } from '../../src/bets/compliance-hooks';
import { FakeClock } from '../../src/clock/clock';
import { DEFAULT_BUSTABIT_SALT, defaultEngineStaleMs, engineHeartbeatMs } from '../../src/config/game-defaults';
import { cashoutCrashBet, placeCrashBet } from '../../src/games/crash/crash-bets';
import { CrashGame } from '../../src/games/crash/crash-game';
import { crashPointFromHash } from '../../src/games/crash/fairness';
import { elapsedForMultiplier, multiplierAt, payoutFor } from '../../src/games/crash/multiplier';
import { RoundEngine } from '../../src/games/engine/engine';
import { FairChainService } from '../../src/games/engine/fair-chain';
import { roundRepository } from '../../src/games/engine/round-repository';
import type { OperatorSettingsPatch } from '../../src/operators/operator';
import { OperatorModes } from '../../src/operators/operator-mode';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import { migrate } from '../../src/store/migrate';
import { SqliteDatabase } from '../../src/store/sqlite';

/**
 * Crash money at its boundaries, on the real engine and driver over a fake clock (SQLite in memory):
 * the per-bet and per-round payout caps, the crash instant, an instant (1.00x) crash, and the
 * bet.settled payload against the stored bet. Each test plays one round of a seed chosen for its
 * crash point, so every payout is known to the unit.
 */

const WINDOW = 1_000;
const PAUSE = 60_000;
const TICK = 100;
const STALE = defaultEngineStaleMs(engineHeartbeatMs(TICK));
const RULES = { salt: DEFAULT_BUSTABIT_SALT, houseEdgeBp: 100, engineStaleMs: STALE };

const crashOf = (seed: string): number => crashPointFromHash(seed, DEFAULT_BUSTABIT_SALT, 100);

/** The first of a fixed sequence of seeds whose crash point satisfies `ok` (deterministic). */
function seedWhere(ok: (crash: number) => boolean): { seed: string; crash: number } {
  for (let i = 0; i < 1_000_000; i++) {
    const seed = createHash('sha256').update(`money-boundaries-${i}`).digest('hex');
    const crash = crashOf(seed);
    if (ok(crash)) return { seed, crash };
  }
  throw new Error('no seed found');
}

interface World {
  db: SqliteDatabase;
  clock: FakeClock;
  engine: RoundEngine;
  operators: OperatorService;
  writes: BetContext;
}

let world: World | null = null;

afterEach(async () => {
  if (!world) return;
  await world.engine.stop();
  await world.db.close();
  world = null;
});

/** A store whose chain plays `seed` first, an engine on a fake clock, started with round 1 open. */
async function play(seed: string): Promise<World> {
  const clock = new FakeClock(1_800_000_000_000);
  const db = new SqliteDatabase({ filename: ':memory:' });
  await migrate(db);
  await db.transaction(async (tx) => {
    await tx.run(`INSERT INTO fair_chains (game, chain_id, idx, hash) VALUES ('crash', 'c1', 0, ?)`, [seed]);
    await tx.run(`INSERT INTO fair_chain_cursor (game, chain_id, next_idx, length) VALUES ('crash', 'c1', 0, 1)`);
    await tx.run(
      `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at, salt, salt_fixed_at)
       VALUES ('c1', 'crash', 1, 'fixture', ?, 0, ?, 0)`,
      [seed, DEFAULT_BUSTABIT_SALT],
    );
  });
  const logger = pino({ level: 'silent' });
  const operators = new OperatorService(db, new SecretBox(randomBytes(32)), clock, 1000);
  const modes = new OperatorModes();
  const game = new CrashGame({
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
  const engine = new RoundEngine({ db, clock, driver: game, logger, modes, chain, leaseCheckMs: 600_000 });
  world = { db, clock, engine, operators, writes: { compliance: noCompliance, modes } };
  await engine.start();
  await clock.advanceAsync(0);
  return world;
}

async function operator(w: World, crash: OperatorSettingsPatch['crash']) {
  const created = await w.operators.create({ name: 'o', settings: { crash } });
  return w.operators.get(created.id);
}

async function bet(w: World, op: Awaited<ReturnType<typeof operator>>, amount: number, auto: number | null) {
  return w.db.transaction((tx) =>
    placeCrashBet(tx, w.writes, op, { externalUserId: 'p', amount, autoCashout: auto }, w.clock.now()),
  );
}

/** Every bet of the round as stored, and the sum of what was paid. */
async function settled(w: World) {
  const rows = await w.db.all<{
    id: string;
    status: string;
    amount: number;
    payout: number | null;
    cashout_multiplier: number | null;
    cashout_kind: string | null;
  }>('SELECT id, status, amount, payout, cashout_multiplier, cashout_kind FROM bets ORDER BY placed_at, id');
  const bets = rows.map((r) => ({
    ...r,
    amount: Number(r.amount),
    payout: r.payout === null ? null : Number(r.payout),
    cashout_multiplier: r.cashout_multiplier === null ? null : Number(r.cashout_multiplier),
  }));
  return { bets, total: bets.reduce((sum, b) => sum + (b.payout ?? 0), 0) };
}

/** Each bet has exactly one bet.settled event, and its numbers are the stored row's. */
async function expectEventsMatchRows(w: World): Promise<void> {
  const { bets } = await settled(w);
  const events = await w.db.all<{ data: string }>(`SELECT data FROM events WHERE type = 'bet.settled'`);
  const byBet = new Map<string, Record<string, unknown>[]>();
  for (const e of events) {
    const data = JSON.parse(e.data) as Record<string, unknown>;
    byBet.set(String(data.bet_id), [...(byBet.get(String(data.bet_id)) ?? []), data]);
  }
  for (const b of bets) {
    if (b.status === 'active') continue;
    const mine = byBet.get(b.id) ?? [];
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      amount: b.amount,
      status: b.status,
      payout: b.payout,
      multiplier: b.cashout_multiplier === null ? null : b.cashout_multiplier / 100,
      cashout_kind: b.cashout_kind,
    });
    if (b.cashout_multiplier !== null)
      expect(Math.round((mine[0]!.multiplier as number) * 100)).toBe(b.cashout_multiplier);
  }
}

describe('Crash payout caps on the engine (fake clock)', () => {
  it('per-bet cap near the stake max: forced at the exact cap point, paid exactly the cap', async () => {
    const { seed, crash } = seedWhere((c) => c >= 150 && c <= 400);
    const w = await play(seed);
    const op = await operator(w, { max_payout_per_bet: 1_234_567, max_payout_per_round: Number.MAX_SAFE_INTEGER });
    const big = await bet(w, op, 999_999, null); // cap point ceil(123456700 / 999999) = 124 (1.24x)
    const exact = await bet(w, op, 1_000_000, 1_000_000); // target far away: the cap forces it too
    const equal = await bet(w, op, 1_234_567, null); // a stake equal to the cap: forced at 1.01x
    await expect(bet(w, op, 1_234_568, null)).rejects.toMatchObject({ code: 'STAKE_OUT_OF_RANGE' });
    await w.clock.advanceAsync(WINDOW);
    await w.clock.advanceAsync(elapsedForMultiplier(crash) + TICK);
    expect(await betRepository.byId(w.db, big.id)).toMatchObject({
      status: 'cashed_out',
      cashoutKind: 'forced',
      cashoutMultiplier: 124,
      payout: 1_234_567,
    });
    expect(await betRepository.byId(w.db, exact.id)).toMatchObject({
      status: 'cashed_out',
      cashoutKind: 'forced',
      cashoutMultiplier: 124,
      payout: 1_234_567,
    });
    expect(await betRepository.byId(w.db, equal.id)).toMatchObject({
      status: 'cashed_out',
      cashoutKind: 'forced',
      cashoutMultiplier: 101,
      payout: 1_234_567,
    });
    await expectEventsMatchRows(w);
  });

  // The per-round cap used to be checked at engine ticks (100 ms apart) with every bet forced out at
  // the tick's multiplier: near 10x a tick spans six hundredths, so the operator paid above the cap.
  it('per-round cap: two bets are forced out at the force point, paying max_payout_per_round in total', async () => {
    const { seed } = seedWhere((c) => c >= 1_100 && c <= 3_000);
    const w = await play(seed);
    const op = await operator(w, { max_payout_per_bet: 10_000_000, max_payout_per_round: 20_000 });
    await bet(w, op, 1_000, null);
    await bet(w, op, 1_000, null);
    await w.clock.advanceAsync(WINDOW);
    await w.clock.advanceAsync(elapsedForMultiplier(1_100));
    const { bets, total } = await settled(w);
    expect(bets.map((b) => [b.status, b.cashout_kind])).toEqual([
      ['cashed_out', 'forced'],
      ['cashed_out', 'forced'],
    ]);
    // Open stake 2,000 reaches the cap at exactly 10.00x; the tick that saw it was at 10.01x or later.
    expect(bets.map((b) => [b.cashout_multiplier, b.payout])).toEqual([
      [1_000, 10_000],
      [1_000, 10_000],
    ]);
    expect(total).toBe(20_000);
  });

  // When the exposure reached the per-round cap between the last tick and the crash, close() used not
  // to force the bets out (it did for a per-bet cap point <= the crash): the curve had reached the
  // force point, yet the player lost the whole stake.
  it('per-round cap: reached between the last tick and the crash, the bets are forced, not lost', async () => {
    const { seed, crash } = seedWhere((c) => {
      if (c < 500 || c > 3_000) return false;
      const crashMs = elapsedForMultiplier(c);
      const lastTick = Math.floor((crashMs - 1) / TICK) * TICK;
      return multiplierAt(lastTick) < c - 1;
    });
    const w = await play(seed);
    // One bet of 100: open stake × m reaches the cap exactly at crash - 0.01x, between two ticks.
    const op = await operator(w, { max_payout_per_bet: 10_000_000, max_payout_per_round: crash - 1 });
    const b = await bet(w, op, 100, null);
    await w.clock.advanceAsync(WINDOW);
    await w.clock.advanceAsync(elapsedForMultiplier(crash) + TICK);
    expect((await roundRepository.latest(w.db, 'crash'))!.status).toBe('closed');
    expect(await betRepository.byId(w.db, b.id)).toMatchObject({
      status: 'cashed_out',
      cashoutKind: 'forced',
      cashoutMultiplier: crash - 1,
      payout: crash - 1,
    });
    await expectEventsMatchRows(w);
  });

  // What the round already paid an operator used not to count toward its per-round cap: a bet that
  // left on its own took its stake out of the exposure and its payout was forgotten, so the force
  // point moved up as if nothing had been paid (here 13,000 paid against a cap of 10,000).
  it('per-round cap: an auto cash-out paid first counts; the rest is forced where the total reaches it', async () => {
    const { seed } = seedWhere((c) => c >= 1_100 && c <= 3_000);
    const w = await play(seed);
    const op = await operator(w, { max_payout_per_bet: 10_000_000, max_payout_per_round: 10_000 });
    const early = await bet(w, op, 1_000, 300); // leaves at 3.00x, paid 3,000
    const rest = await bet(w, op, 1_000, null); // then 3,000 + 1,000 × m reaches 10,000 at 7.00x
    await w.clock.advanceAsync(WINDOW);
    await w.clock.advanceAsync(elapsedForMultiplier(1_100));
    expect(await betRepository.byId(w.db, early.id)).toMatchObject({ cashoutKind: 'auto', payout: 3_000 });
    expect(await betRepository.byId(w.db, rest.id)).toMatchObject({
      cashoutKind: 'forced',
      cashoutMultiplier: 700,
      payout: 7_000,
    });
    expect((await settled(w)).total).toBe(10_000);
    await expectEventsMatchRows(w);
  });

  it('per-round cap: a cash-out by hand counts at what it was paid, read from the store before forcing', async () => {
    const { seed } = seedWhere((c) => c >= 1_100 && c <= 3_000);
    const w = await play(seed);
    const op = await operator(w, { max_payout_per_bet: 10_000_000, max_payout_per_round: 10_000 });
    const byHand = await bet(w, op, 1_000, null);
    const rest = await bet(w, op, 1_000, null);
    await w.clock.advanceAsync(WINDOW);
    // Out by hand near 2.50x (not through this engine's process: it learns of it from the store).
    await w.clock.advanceAsync(elapsedForMultiplier(250));
    const out = await w.db.transaction((tx) => cashoutCrashBet(tx, w.writes, RULES, op, byHand.id, w.clock.now()));
    expect(out.payout).toBeGreaterThanOrEqual(2_500);
    expect(out.payout).toBeLessThan(2_600);
    await w.clock.advanceAsync(elapsedForMultiplier(1_100) - elapsedForMultiplier(250));
    // 10,000 − what the first was paid, at 1,000 staked: forced at that many hundredths.
    const point = (10_000 - out.payout) / 10;
    expect(await betRepository.byId(w.db, rest.id)).toMatchObject({
      cashoutKind: 'forced',
      cashoutMultiplier: Math.ceil(point),
      payout: Math.floor((1_000 * Math.ceil(point)) / 100),
    });
    expect((await settled(w)).total).toBeLessThanOrEqual(10_000 + 9);
  });

  it('per-bet cap point exactly at the crash point is paid (target <= crash wins)', async () => {
    const { seed, crash } = seedWhere((c) => c >= 200 && c <= 600);
    const w = await play(seed);
    // A stake of 100: the cap point is the cap itself in hundredths.
    const op = await operator(w, { max_payout_per_bet: crash, max_payout_per_round: Number.MAX_SAFE_INTEGER });
    const at = await bet(w, op, 100, null);
    const op2 = await operator(w, { max_payout_per_bet: crash + 1, max_payout_per_round: Number.MAX_SAFE_INTEGER });
    const above = await bet(w, op2, 100, null);
    await w.clock.advanceAsync(WINDOW);
    await w.clock.advanceAsync(elapsedForMultiplier(crash) + TICK);
    expect(await betRepository.byId(w.db, at.id)).toMatchObject({
      status: 'cashed_out',
      cashoutKind: 'forced',
      cashoutMultiplier: crash,
      payout: crash,
    });
    expect(await betRepository.byId(w.db, above.id)).toMatchObject({ status: 'lost', payout: 0 });
    await expectEventsMatchRows(w);
  });
});

describe('Crash round edges on the engine (fake clock)', () => {
  it('a 1.00x round: every bet loses, a cash-out at the running instant is refused, events match', async () => {
    const { seed } = seedWhere((c) => c === 100);
    const w = await play(seed);
    const op = await operator(w, { max_payout_per_bet: 1_000, max_payout_per_round: 1_000 });
    const manual = await bet(w, op, 500, null);
    const auto = await bet(w, op, 1_000, 101); // stake = per-bet cap: its forced point is 1.01x as well
    const round = (await roundRepository.latest(w.db, 'crash'))!;
    // The round runs for 0 ms: asked for at the very instant it starts running, there is nothing to pay.
    const runningAt = round.bettingClosesAt;
    await w.clock.advanceAsync(WINDOW);
    await expect(
      w.db.transaction((tx) => cashoutCrashBet(tx, w.writes, RULES, op, manual.id, runningAt)),
    ).rejects.toMatchObject({ code: 'BET_NOT_ACTIVE' });
    await w.clock.advanceAsync(TICK);
    expect(await roundRepository.byId(w.db, round.id)).toMatchObject({
      status: 'closed',
      outcome: { crash_point: 100 },
    });
    expect(await betRepository.byId(w.db, manual.id)).toMatchObject({ status: 'lost', payout: 0 });
    expect(await betRepository.byId(w.db, auto.id)).toMatchObject({ status: 'lost', payout: 0 });
    await expectEventsMatchRows(w);
  });

  it('a bet placed at exactly betting_closes_at is refused; one ms before is accepted', async () => {
    const { seed } = seedWhere((c) => c >= 150);
    const w = await play(seed);
    const op = await operator(w, { max_payout_per_bet: 10_000_000, max_payout_per_round: 100_000_000 });
    const round = (await roundRepository.latest(w.db, 'crash'))!;
    const at = (now: number) =>
      w.db.transaction((tx) =>
        placeCrashBet(tx, w.writes, op, { externalUserId: 'p', amount: 1, autoCashout: null }, now),
      );
    await expect(at(round.bettingClosesAt - 1)).resolves.toMatchObject({ roundNumber: 1 });
    await expect(at(round.bettingClosesAt)).rejects.toMatchObject({ code: 'BETTING_CLOSED' });
  });

  it('a manual cash-out 1 ms before the crash is paid, at it refused; auto = crash wins; events match', async () => {
    const { seed, crash } = seedWhere((c) => c >= 300 && c <= 800);
    const w = await play(seed);
    const op = await operator(w, { max_payout_per_bet: 10_000_000, max_payout_per_round: Number.MAX_SAFE_INTEGER });
    const before = await bet(w, op, 999_999, null);
    const atCrash = await bet(w, op, 1_000, null);
    const auto = await bet(w, op, 777_777, crash);
    const autoAbove = await bet(w, op, 777_777, crash + 1);
    const round = (await roundRepository.latest(w.db, 'crash'))!;
    await w.clock.advanceAsync(WINDOW);
    const crashMs = elapsedForMultiplier(crash);
    await w.clock.advanceAsync(crashMs - 1);
    const runningAt = round.bettingClosesAt;
    expect(w.clock.now()).toBe(runningAt + crashMs - 1);
    const paid = await w.db.transaction((tx) => cashoutCrashBet(tx, w.writes, RULES, op, before.id, w.clock.now()));
    const m = multiplierAt(crashMs - 1);
    expect(m).toBeLessThan(crash);
    expect(paid).toMatchObject({ cashoutMultiplier: m, payout: payoutFor(999_999, m), cashoutKind: 'manual' });
    expect(paid.payout).toBe(Number((999_999n * BigInt(m)) / 100n));
    // The round is still running in the store (the engine closes it at the next instant).
    await expect(
      w.db.transaction((tx) => cashoutCrashBet(tx, w.writes, RULES, op, atCrash.id, runningAt + crashMs)),
    ).rejects.toMatchObject({ code: 'BET_NOT_ACTIVE' });
    // The same bet twice: the second is refused, nothing paid twice.
    await expect(
      w.db.transaction((tx) => cashoutCrashBet(tx, w.writes, RULES, op, before.id, w.clock.now())),
    ).rejects.toMatchObject({ code: 'BET_NOT_ACTIVE' });
    await w.clock.advanceAsync(TICK);
    expect(await betRepository.byId(w.db, auto.id)).toMatchObject({
      status: 'cashed_out',
      cashoutMultiplier: crash,
      payout: Number((777_777n * BigInt(crash)) / 100n),
      cashoutKind: 'auto',
    });
    expect(await betRepository.byId(w.db, autoAbove.id)).toMatchObject({ status: 'lost', payout: 0 });
    expect(await betRepository.byId(w.db, atCrash.id)).toMatchObject({ status: 'lost', payout: 0 });
    await expectEventsMatchRows(w);
  });

  it('a void after some cash-outs refunds only the active bets, once, and leaves the cashed-out ones', async () => {
    const { seed, crash } = seedWhere((c) => c >= 300 && c <= 800);
    const w = await play(seed);
    const op = await operator(w, { max_payout_per_bet: 10_000_000, max_payout_per_round: Number.MAX_SAFE_INTEGER });
    const auto = await bet(w, op, 1_001, 150);
    const manual = await bet(w, op, 999_999, null);
    const open = await bet(w, op, 333, null);
    const round = (await roundRepository.latest(w.db, 'crash'))!;
    await w.clock.advanceAsync(WINDOW);
    await w.clock.advanceAsync(elapsedForMultiplier(200));
    expect(crash).toBeGreaterThan(200);
    const paid = await w.db.transaction((tx) => cashoutCrashBet(tx, w.writes, RULES, op, manual.id, w.clock.now()));
    await w.engine.voidRound(round.id, 'operations');
    await w.engine.voidRound(round.id, 'operations again');
    expect(await roundRepository.byId(w.db, round.id)).toMatchObject({ status: 'void' });
    expect(await betRepository.byId(w.db, auto.id)).toMatchObject({ status: 'cashed_out', payout: 1_501 });
    expect(await betRepository.byId(w.db, manual.id)).toMatchObject({ status: 'cashed_out', payout: paid.payout });
    expect(await betRepository.byId(w.db, open.id)).toMatchObject({ status: 'void', payout: 333 });
    await expectEventsMatchRows(w);
  });
});
