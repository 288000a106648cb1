import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActiveCrashBet, Bet, CashedOutCrashBet, EndedCrashBet } from '../../src/bets/bet';
import { betRepository } from '../../src/bets/bet-repository';
import { FakeClock } from '../../src/clock/clock';
import { complianceRepository } from '../../src/compliance/compliance-repository';
import { ComplianceService } from '../../src/compliance/compliance-service';
import { DEFAULT_OPERATOR_SETTINGS } from '../../src/operators/operator';
import { OperatorModes } from '../../src/operators/operator-mode';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import type { Database } from '../../src/store/database';
import { freshDatabase, STORES } from '../support/harness';

describe.each(STORES)('compliance flags on %s', (store) => {
  let db: Database;
  let dispose: () => Promise<void>;
  const clock = new FakeClock(1_800_000_000_000);
  let operators: OperatorService;
  const compliance = new ComplianceService({ modes: new OperatorModes() });

  beforeAll(async () => {
    const fresh = await freshDatabase(store);
    db = fresh.db;
    dispose = fresh.dispose;
    operators = new OperatorService(db, new SecretBox(randomBytes(32)), clock, 0);
  });
  afterAll(async () => dispose?.());

  async function operatorWith(compliancePatch: Partial<typeof DEFAULT_OPERATOR_SETTINGS.compliance>): Promise<string> {
    const op = await operators.create({
      name: 'c',
      settings: { compliance: { ...DEFAULT_OPERATOR_SETTINGS.compliance, ...compliancePatch } },
    });
    // Subscribed, so every flag must also leave a delivery in the same transaction.
    await db.transaction((tx) =>
      tx.run(
        `INSERT INTO webhook_endpoints (id, operator_id, url, surface, events, enabled, secret_enc,
           created_at, updated_at)
         VALUES (?, ?, ?, 'A', ?, 1, 'x', 0, 0)`,
        [`we_${randomUUID()}`, op.id, 'https://example.com/hook', JSON.stringify(['compliance.flag'])],
      ),
    );
    return op.id;
  }

  let roundNo = 0;
  async function round(runningAt: number): Promise<string> {
    const id = randomUUID();
    roundNo++;
    await db.transaction((tx) =>
      tx.run(
        `INSERT INTO rounds (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at,
           betting_closes_at, running_at, settings)
         VALUES (?, 'crash', ?, 'running', 'h', 's', 'c', ?, ?, ?, ?, '{}')`,
        [id, roundNo, roundNo, runningAt - 1000, runningAt, runningAt],
      ),
    );
    return id;
  }

  function bet(
    operatorId: string,
    roundId: string,
    player: string,
    over: Partial<ActiveCrashBet> = {},
  ): ActiveCrashBet {
    return {
      id: randomUUID(),
      operatorId,
      game: 'crash',
      roundId,
      roundNumber: roundNo,
      player,
      sessionId: null,
      currency: null,
      amount: 10,
      autoCashout: null,
      selections: null,
      status: 'active',
      potentialPayout: null,
      placedAt: clock.now(),
      ...over,
    };
  }

  const flags = (operatorId: string, rule?: string, player?: string) =>
    compliance.listFlags(operatorId, { rule, player }, db);
  const deliveries = async (operatorId: string) =>
    Number(
      (await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE operator_id = ?`, [operatorId]))
        ?.n,
    );

  async function manualCashout(operatorId: string, player: string, elapsedMs: number): Promise<Bet> {
    const runningAt = clock.now();
    const roundId = await round(runningAt);
    const b = bet(operatorId, roundId, player, { placedAt: runningAt - 500 });
    const settled: CashedOutCrashBet = {
      ...b,
      status: 'cashed_out',
      payout: 20,
      cashoutMultiplier: 200,
      cashoutKind: 'manual',
      settledAt: runningAt + elapsedMs,
    };
    await db.transaction(async (tx) => {
      await betRepository.insert(tx, settled);
      await compliance.betSettled(tx, settled, runningAt + elapsedMs);
    });
    clock.advance(20_000);
    return settled;
  }

  it('flags machine-like cash-out timing once per streak, not human timing', async () => {
    const op = await operatorWith({ machine_timing_streak: 3, machine_timing_window_ms: 15 });
    await manualCashout(op, 'human', 1200);
    await manualCashout(op, 'human', 2900);
    await manualCashout(op, 'human', 1210);
    expect(await flags(op, 'machine_timing')).toEqual([]);

    const bot = [
      await manualCashout(op, 'bot', 3000),
      await manualCashout(op, 'bot', 3012),
      await manualCashout(op, 'bot', 3004),
    ];
    const found = await flags(op, 'machine_timing');
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      rule: 'machine_timing',
      player: 'bot',
      bet_id: bot[2]!.id,
      game: 'crash',
      details: {
        streak: 3,
        window_ms: 15,
        spread_ms: 12,
        elapsed_ms: [3004, 3012, 3000],
        bet_ids: [bot[2]!.id, bot[1]!.id, bot[0]!.id],
      },
    });
    // The fourth cash-out continues the same streak: no second flag until a fresh streak of three.
    await manualCashout(op, 'bot', 3001);
    await manualCashout(op, 'bot', 3002);
    expect(await flags(op, 'machine_timing')).toHaveLength(1);
    await manualCashout(op, 'bot', 3003);
    expect(await flags(op, 'machine_timing')).toHaveLength(2);
    expect(await deliveries(op)).toBe(2);
  });

  it('flags bet velocity once per player per minute, and large stakes and payouts', async () => {
    const op = await operatorWith({ bets_per_minute_per_player: 2, large_stake: 1000, large_payout: 5000 });
    const roundId = await round(clock.now());
    for (let i = 0; i < 5; i++) {
      await db.transaction(async (tx) => {
        const b = bet(op, roundId, 'fast', { amount: i === 4 ? 1000 : 10, placedAt: clock.now() });
        await betRepository.insert(tx, b);
        await compliance.betPlaced(tx, b, clock.now());
      });
      clock.advance(1000);
    }
    const velocity = await flags(op, 'bet_velocity', 'fast');
    expect(velocity).toHaveLength(1);
    expect(velocity[0]!.details).toEqual({ bets_in_last_minute: 3, threshold: 2, window_ms: 60_000 });
    expect((await flags(op, 'large_stake')).map((f) => f.details)).toEqual([{ amount: 1000, threshold: 1000 }]);

    await db.transaction(async (tx) => {
      const b: CashedOutCrashBet = {
        ...bet(op, roundId, 'lucky'),
        status: 'cashed_out',
        payout: 7000,
        cashoutMultiplier: 70000,
        cashoutKind: 'auto',
        settledAt: clock.now(),
      };
      await betRepository.insert(tx, b);
      await compliance.betSettled(tx, b, clock.now());
      const v: EndedCrashBet = {
        ...bet(op, roundId, 'voided', { amount: 9000 }),
        status: 'void',
        payout: 9000,
        cashoutMultiplier: null,
        cashoutKind: null,
        settledAt: clock.now(),
      };
      await betRepository.insert(tx, v);
      await compliance.betSettled(tx, v, clock.now());
    });
    expect((await flags(op, 'large_payout')).map((f) => [f.player, f.details])).toEqual([
      ['lucky', { payout: 7000, threshold: 5000 }],
    ]);
    expect(await deliveries(op)).toBe(3);
  });

  it("pages through flags raised in one instant with starting_after; another operator's is no cursor", async () => {
    const op = await operatorWith({});
    const raisedAt = clock.now();
    // A round's close raises its flags in one transaction: one created_at for all of them.
    await db.transaction(async (tx) => {
      for (let i = 0; i < 7; i++) {
        await complianceRepository.insertFlag(tx, {
          id: `cf_page_${i}`,
          operator_id: op,
          rule: 'large_payout',
          player: `p${i}`,
          bet_id: null,
          details: '{}',
          created_at: raisedAt,
        });
      }
    });
    const seen: string[] = [];
    const pages: number[] = [];
    let startingAfter: string | undefined;
    for (let page = 0; page < 6; page++) {
      const list = await compliance.listFlags(op, { limit: 3, startingAfter }, db);
      if (list.length === 0) break;
      pages.push(list.length);
      seen.push(...list.map((f) => f.flag_id));
      startingAfter = list.at(-1)!.flag_id;
    }
    expect(pages).toEqual([3, 3, 1]);
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => `cf_page_${i}`));
    // `before` alone, the only cursor there was, cannot leave the first page: every flag has the same instant.
    expect(await compliance.listFlags(op, { limit: 3, before: raisedAt }, db)).toEqual([]);
    const other = await operatorWith({});
    await expect(compliance.listFlags(other, { startingAfter: 'cf_page_0' }, db)).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
      message: 'starting_after: no flag cf_page_0 of this operator (give the last flag_id of a page)',
    });
  });

  it('flags a session used from a second place, once per new place', async () => {
    const op = await operatorWith({});
    const seen = (place: string) =>
      compliance.sessionSeen(db, {
        operatorId: op,
        sessionId: 's-1',
        player: 'p',
        place,
        now: clock.now(),
        game: 'crash',
      });
    expect(await seen('203.0.113.5')).toBe(false);
    expect(await seen('203.0.113.5')).toBe(false);
    expect(await seen('198.51.100.7')).toBe(true);
    expect(await seen('198.51.100.7')).toBe(false);
    const found = await flags(op, 'session_multi_place');
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      session_id: 's-1',
      player: 'p',
      // The game whose page the second place opened (it read stock_race whatever the page was).
      game: 'crash',
      details: { places: 2, threshold: 1, window_ms: 600_000 },
    });
    expect(JSON.stringify(found)).not.toContain('198.51.100.7');
  });

  it('never refuses a bet, even when the rules cannot be evaluated', async () => {
    const op = await operatorWith({ large_stake: 1 });
    await db.transaction((tx) => tx.run(`UPDATE operators SET settings = 'not json' WHERE id = ?`, [op]));
    const roundId = await round(clock.now());
    const b = bet(op, roundId, 'p', { amount: 999 });
    clock.advance(5000); // past the settings cache
    await db.transaction(async (tx) => {
      await betRepository.insert(tx, b);
      await compliance.betPlaced(tx, b, clock.now());
    });
    expect(await betRepository.byId(db, b.id)).toMatchObject({ id: b.id, status: 'active' });
    expect(await flags(op)).toEqual([]);
  });
});
