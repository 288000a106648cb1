import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, SqlParam } from '../../src/store/database';
import {
  aroundPrepared,
  client,
  eventually,
  KNOWN_CRASH_SEEDS,
  startTestApp,
  STORES,
  withSeeds,
  type TestApp,
  type TestOperator,
} from '../support/harness';
import { CallHold } from '../support/prepared-calls';

// Each request signed at its own instant: the same bytes under another key would be refused as a
// replayed signature, which is not what these tests are about.
let signedAt = Date.now();
const cashoutOf = (call: ReturnType<typeof client>, betId: string, key: string) =>
  call('POST', '/api/public/v1/cashout', { bet_id: betId }, { idempotencyKey: key, timestamp: ++signedAt });
const countRows = async (db: Database, sql: string, params: SqlParam[]): Promise<number> =>
  Number((await db.get<{ n: number }>(sql, params))!.n);

/**
 * Cash-outs on PostgreSQL that arrive together share one read and one rbs_cash_outs call (one
 * commit), and the read of the next ones runs while a write is in flight. Over real HTTP: what the
 * operator gets back (status, body, replays) and what the store holds must be what the same
 * cash-outs sent one after the other would give.
 */
describe.runIf(STORES.includes('postgres'))('concurrent Crash cash-outs on postgres', () => {
  let t: TestApp;
  let call: ReturnType<typeof client>;
  let db: Database;
  /** rbs_cash_outs calls, as the keys each carried. */
  const batches: string[][] = [];
  /** Set: the next lone cash-out read is held this long, so that the requests sent with it queue behind it. */
  let holdNextReadMs = 0;

  beforeAll(async () => {
    t = await startTestApp({
      store: 'postgres',
      // 3.77x: the round runs for about twenty seconds, far longer than the test needs.
      env: { CRASH_BETTING_WINDOW_MS: '2000', CRASH_PAUSE_MS: '60000', CRASH_TICK_MS: '50' },
      beforeStart: async (store) => {
        await withSeeds('crash', [KNOWN_CRASH_SEEDS.x377])(store);
        aroundPrepared(store, async (name, params, proceed) => {
          if (name === 'rbs_cash_outs')
            batches.push((JSON.parse(String(params[0])) as SqlParam[][]).map((args) => String(args[1])));
          if (name === 'rbs_bet_and_round' && holdNextReadMs > 0) {
            const ms = holdNextReadMs;
            holdNextReadMs = 0;
            await new Promise((r) => setTimeout(r, ms));
          }
          return proceed();
        });
      },
    });
    db = t.app.db;
    const op: TestOperator = await t.createOperator();
    call = client(t.baseUrl, op);
  });
  afterAll(async () => t?.close());

  const cashout = (betId: string, key: string) => cashoutOf(call, betId, key);
  const count = (sql: string, params: SqlParam[] = []) => countRows(db, sql, params);
  const settledEventsOf = (betId: string): Promise<number> =>
    count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled' AND data LIKE ?", [`%${betId}%`]);

  it('settles each with its own payout, key, event; a duplicate in the call is answered as if sent after', async () => {
    await eventually(async () => (await call('GET', '/api/public/v1/rounds/current')).body?.status === 'open');
    const placed = await Promise.all(
      Array.from({ length: 31 }, (_, i) =>
        call(
          'POST',
          '/api/public/v1/place-bet',
          { external_user_id: `player-${i}`, amount: 1_000 + i },
          { idempotencyKey: `bet-${i}` },
        ),
      ),
    );
    expect(placed.map((p) => p.status)).toEqual(placed.map(() => 200));
    const bets = placed.map((p, i) => ({ id: p.body.bet_id as string, amount: 1_000 + i }));
    const dup = bets.pop()!;

    await eventually(
      async () => (await call('GET', '/api/public/v1/rounds/current')).body?.multiplier >= 1.05,
      10_000,
      20,
    );
    // The first request's read is held: every other one queues behind it, and they go out together.
    holdNextReadMs = 300;
    const [first, ...rest] = await Promise.all([
      cashout(bets[0]!.id, 'cash-0'),
      ...bets.slice(1).map((b, i) => cashout(b.id, `cash-${i + 1}`)),
      cashout(dup.id, 'dup-a'),
      cashout(dup.id, 'dup-b'),
    ]);
    const answers = [first!, ...rest.slice(0, -2)];
    const [dupA, dupB] = rest.slice(-2);
    expect(batches.flat()).toEqual(expect.arrayContaining(['dup-a', 'dup-b']));
    expect(batches.find((keys) => keys.includes('dup-a'))).toContain('dup-b');

    for (const [i, answer] of answers.entries()) {
      const bet = bets[i]!;
      expect(answer.status).toBe(200);
      expect(answer.headers['idempotent-replay']).toBeUndefined();
      const hundredths = Math.round(answer.body.multiplier * 100);
      expect(hundredths).toBeGreaterThanOrEqual(105);
      expect(answer.body).toEqual({
        bet_id: bet.id,
        payout: Math.floor((bet.amount * hundredths) / 100),
        multiplier: answer.body.multiplier,
      });
      const row = await db.get<{ status: string; payout: number; cashout_multiplier: number; cashout_kind: string }>(
        'SELECT status, payout, cashout_multiplier, cashout_kind FROM bets WHERE id = ?',
        [bet.id],
      );
      expect({ ...row, payout: Number(row!.payout), cashout_multiplier: Number(row!.cashout_multiplier) }).toEqual({
        status: 'cashed_out',
        payout: answer.body.payout,
        cashout_multiplier: hundredths,
        cashout_kind: 'manual',
      });
      expect(await settledEventsOf(bet.id)).toBe(1);
    }
    expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key LIKE 'cash-%'")).toBe(30);

    // Of the two cash-outs of one bet, one settles and the other is refused, exactly as a third sent
    // afterwards, alone, is refused.
    const [won, lost] = dupA!.status === 200 ? [dupA!, dupB!] : [dupB!, dupA!];
    expect(won.status).toBe(200);
    expect(won.body.bet_id).toBe(dup.id);
    const after = await cashout(dup.id, 'dup-c');
    expect(after.status).toBe(409);
    expect(after.body.code).toBe('BET_NOT_ACTIVE');
    expect({ status: lost.status, body: lost.body }).toEqual({ status: after.status, body: after.body });
    expect(await settledEventsOf(dup.id)).toBe(1);
    expect(Number((await db.get<{ payout: number }>('SELECT payout FROM bets WHERE id = ?', [dup.id]))!.payout)).toBe(
      won.body.payout,
    );
    expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key LIKE 'dup-%'")).toBe(3);

    // Replays of keys used in the shared call send back what it stored, and change nothing.
    const replayed = await cashout(bets[5]!.id, 'cash-5');
    expect(replayed.status).toBe(200);
    expect(replayed.headers['idempotent-replay']).toBe('true');
    expect(replayed.body).toEqual(answers[5]!.body);
    const lostKey = won === dupA ? 'dup-b' : 'dup-a';
    const refusedAgain = await cashout(dup.id, lostKey);
    expect(refusedAgain.headers['idempotent-replay']).toBe('true');
    expect({ status: refusedAgain.status, body: refusedAgain.body }).toEqual({ status: lost.status, body: lost.body });
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled'")).toBe(31);
  }, 30_000);
});

describe.runIf(STORES.includes('postgres'))('a Crash cash-out read while a write of its bet is in flight', () => {
  let t: TestApp;
  let call: ReturnType<typeof client>;
  let db: Database;
  const hold = new CallHold();
  /** The key of each cash-out sent to a write call, in order. */
  const written: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      store: 'postgres',
      env: { CRASH_BETTING_WINDOW_MS: '2000', CRASH_PAUSE_MS: '60000', CRASH_TICK_MS: '50' },
      beforeStart: async (store) => {
        await withSeeds('crash', [KNOWN_CRASH_SEEDS.x377])(store);
        aroundPrepared(store, (name, params, proceed) => {
          if (name === 'rbs_cash_out') written.push(String(params[1]));
          if (name === 'rbs_cash_outs')
            written.push(...(JSON.parse(String(params[0])) as SqlParam[][]).map((args) => String(args[1])));
          return hold.around(name, params, proceed);
        });
      },
    });
    db = t.app.db;
    call = client(t.baseUrl, await t.createOperator());
  });
  afterAll(async () => t?.close());

  const cashout = (betId: string, key: string) => cashoutOf(call, betId, key);
  const count = (sql: string, params: SqlParam[] = []) => countRows(db, sql, params);

  it('gets what it would get sent after that write: a 409, its payout written once', async () => {
    await eventually(async () => (await call('GET', '/api/public/v1/rounds/current')).body?.status === 'open');
    const placed = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'player-twice', amount: 1_000 },
      { idempotencyKey: 'bet-twice' },
    );
    expect(placed.status).toBe(200);
    const betId = placed.body.bet_id as string;
    await eventually(
      async () => (await call('GET', '/api/public/v1/rounds/current')).body?.multiplier >= 1.05,
      10_000,
      20,
    );

    // The first cash-out's write is held; the second's read runs meanwhile and finds the bet active.
    const holding = hold.arm(['rbs_cash_out', 'rbs_cash_outs']);
    const first = cashout(betId, 'twice-a');
    await holding;
    let second: ReturnType<typeof cashout> | undefined;
    try {
      second = cashout(betId, 'twice-b');
      await eventually(
        async () => hold.duringHold.some((c) => c.name === 'rbs_bet_and_round' && c.returned),
        5_000,
        5,
        'the second read, while the first write is in flight',
      );
    } finally {
      hold.release();
    }
    const [won, lost] = await Promise.all([first, second!]);
    // It decided to settle the bet and went to a write, which found the bet cashed out.
    expect(written).toEqual(['twice-a', 'twice-b']);

    expect(won.status).toBe(200);
    expect(won.body.bet_id).toBe(betId);
    const after = await cashout(betId, 'twice-c');
    expect({ status: after.status, code: after.body.code }).toEqual({ status: 409, code: 'BET_NOT_ACTIVE' });
    expect({ status: lost.status, body: lost.body }).toEqual({ status: after.status, body: after.body });
    expect(lost.headers['idempotent-replay']).toBeUndefined();

    const row = await db.get<{ status: string; payout: number }>('SELECT status, payout FROM bets WHERE id = ?', [
      betId,
    ]);
    expect({ status: row!.status, payout: Number(row!.payout) }).toEqual({
      status: 'cashed_out',
      payout: won.body.payout,
    });
    expect(
      await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled' AND data LIKE ?", [`%${betId}%`]),
    ).toBe(1);
    expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idem_key LIKE 'twice-%'")).toBe(3);

    // Each key replays what it got.
    for (const [key, answer] of [
      ['twice-a', won],
      ['twice-b', lost],
    ] as const) {
      const replayed = await cashout(betId, key);
      expect(replayed.headers['idempotent-replay']).toBe('true');
      expect({ status: replayed.status, body: replayed.body }).toEqual({ status: answer.status, body: answer.body });
    }
    expect(await count("SELECT COUNT(*) AS n FROM events WHERE type = 'bet.settled'")).toBe(1);
  }, 30_000);
});
