import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { roundRepository } from '../../src/games/engine/round-repository';
import type { Database, SqlParam } from '../../src/store/database';
import {
  aroundPrepared,
  client,
  eventually,
  startTestApp,
  STORES,
  withSeeds,
  type TestApp,
  type TestOperator,
} from '../support/harness';

// sha256("surface-b-test-0"): NVDA wins at +8.85%.
const SEED_NVDA = '75fed4db566aa59dc746e89f1a940794d6ac7af868d356f9f13608cabc3c62b1';

/**
 * Stock Race reservations on PostgreSQL that arrive together share one read of their sessions and
 * rounds (then the shared place-bet call). Over real HTTP: what the operator gets back (status, body,
 * replays) and what the store holds must be what the same reservations sent one at a time would give.
 */
describe.runIf(STORES.includes('postgres'))('concurrent Stock Race reservations on postgres', () => {
  let t: TestApp;
  let db: Database;
  let call: ReturnType<typeof client>;
  let other: TestOperator;
  let roundId: string;
  const clock = new FakeClock(Date.now());
  /** rbs_sessions_and_rounds calls, as the session ids and round ids each read. */
  const reads: { sessions: string[]; rounds: string[] }[] = [];
  /** Set: the next lone reservation read is held this long, so the requests sent with it queue behind it. */
  let holdNextReadMs = 0;

  beforeAll(async () => {
    t = await startTestApp({
      store: 'postgres',
      clock,
      env: { STOCK_RACE_BETTING_WINDOW_MS: '60000', STOCK_RACE_DURATION_MS: '2000', STOCK_RACE_PAUSE_MS: '1000' },
      beforeStart: async (store) => {
        await withSeeds('stock_race', [SEED_NVDA])(store);
        aroundPrepared(store, async (name, params, proceed) => {
          if (name === 'rbs_sessions_and_rounds')
            reads.push({ sessions: JSON.parse(String(params[0])), rounds: JSON.parse(String(params[1])) });
          if (name === 'rbs_session_and_round' && holdNextReadMs > 0) {
            const ms = holdNextReadMs;
            holdNextReadMs = 0;
            await new Promise((r) => setTimeout(r, ms));
          }
          return proceed();
        });
      },
    });
    db = t.app.db;
    const op = await t.createOperator();
    other = await t.createOperator({ name: 'Other' });
    call = client(t.baseUrl, op, 'B');
    roundId = (await eventually(async () => roundRepository.latest(db, 'stock_race')))!.id;
  });
  afterAll(async () => t?.close());

  const launch = async (as: ReturnType<typeof client>, player: string): Promise<string> => {
    const res = await as(
      'POST',
      '/v1/sessions/launch',
      { player_ref: player, currency: 'EUR', return_url: 'https://op.example/' },
      { timestamp: clock.now() },
    );
    expect(res.status).toBe(200);
    return res.body.session_id;
  };
  const reserve = (body: Record<string, unknown>) => call('POST', '/v1/bets/reserve', body, { timestamp: clock.now() });
  const body = (sessionId: string, round: string, stakeCents: number, key = randomUUID()) => ({
    session_id: sessionId,
    round_id: round,
    selected_stocks: ['NVDA', 'TSLA'],
    stake: stakeCents / 100,
    idempotency_key: key,
  });
  const count = async (sql: string, params: SqlParam[] = []): Promise<number> =>
    Number((await db.get<{ n: number }>(sql, params))!.n);

  it('places each with its exact stake and key, refuses the ones it would refuse alone, and replays', async () => {
    const players = Array.from({ length: 24 }, (_, i) => `player-${i}`);
    const sessions = await Promise.all(players.map((p) => launch(call, p)));
    const theirs = await launch(client(t.baseUrl, other, 'B'), 'their-player');
    const crashRound = (await eventually(async () => roundRepository.latest(db, 'crash')))!.id;

    // Stakes of 10.00 EUR + 0.10 per player: two stocks of eight pay 8 × 0.95 / 2 = 3.8 × stake, in whole cents.
    const stakeOf = (i: number) => 1_000 + 10 * i;
    const placedBodies = sessions.map((s, i) => body(s, roundId, stakeOf(i)));
    const refusedBodies = [
      body(theirs, roundId, 1_000),
      body(sessions[0]!, crashRound, 1_000),
      body(sessions[1]!, 'rnd_nope', 1_000),
      body('ses_nope', roundId, 1_000),
    ];
    // The first request's read is held: every other one queues behind it, and they are read together.
    holdNextReadMs = 300;
    const answers = await Promise.all([...placedBodies, ...refusedBodies].map((b) => reserve(b)));
    const placed = answers.slice(0, placedBodies.length);
    const refused = answers.slice(placedBodies.length);

    // Read together: several sessions per read, and the other rounds named alongside the open one.
    expect(reads.some((r) => r.sessions.length > 1)).toBe(true);
    expect(reads.flatMap((r) => r.sessions)).toEqual(expect.arrayContaining([theirs, 'ses_nope']));
    expect(reads.flatMap((r) => r.rounds)).toEqual(expect.arrayContaining([roundId, crashRound, 'rnd_nope']));

    for (const [i, res] of placed.entries()) {
      expect(res.status).toBe(200);
      expect(res.headers['idempotent-replay']).toBeUndefined();
      expect(res.body).toEqual({
        bet_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        round_id: roundId,
        round_number: 1,
        session_id: sessions[i],
        player_ref: players[i],
        status: 'reserved',
        stake: stakeOf(i) / 100,
        currency: 'EUR',
        selected_stocks: ['NVDA', 'TSLA'],
        potential_payout: (38 * stakeOf(i)) / 1_000,
        placed_at: clock.now(),
      });
      const row = await db.get<Record<string, unknown>>(
        'SELECT round_id, session_id, player, currency, amount, status, selections FROM bets WHERE id = ?',
        [res.body.bet_id],
      );
      expect({ ...row, amount: Number(row!.amount) }).toEqual({
        round_id: roundId,
        session_id: sessions[i],
        player: players[i],
        currency: 'EUR',
        amount: stakeOf(i),
        status: 'reserved',
        selections: '["NVDA","TSLA"]',
      });
    }
    expect(await count("SELECT COUNT(*) AS n FROM bets WHERE game = 'stock_race'")).toBe(placedBodies.length);

    expect(refused.map((r) => [r.status, r.body.error])).toEqual([
      [404, 'SESSION_NOT_FOUND'],
      [409, 'WRONG_GAME'],
      [404, 'ROUND_NOT_FOUND'],
      [404, 'SESSION_NOT_FOUND'],
    ]);
    // Each key stored once, with the response the operator got.
    const all = [...placedBodies, ...refusedBodies];
    for (const [i, b] of all.entries()) {
      const stored = await db.all<{ status_code: number; response: string }>(
        'SELECT status_code, response FROM idempotency_keys WHERE idem_key = ?',
        [b.idempotency_key],
      );
      expect(stored.map((s) => ({ status: Number(s.status_code), body: JSON.parse(s.response) }))).toEqual([
        { status: answers[i]!.status, body: answers[i]!.body },
      ]);
    }

    // Each refusal is what the same reservation sent alone, under a new key, gets.
    for (const [i, b] of refusedBodies.entries()) {
      const alone = await reserve({ ...b, idempotency_key: randomUUID() });
      expect({ status: alone.status, body: alone.body }).toEqual({
        status: refused[i]!.status,
        body: refused[i]!.body,
      });
    }

    // Replays of keys used in the batch send back what was stored, and write nothing.
    for (const i of [0, 5, placedBodies.length]) {
      const again = await reserve(all[i]!);
      expect(again.headers['idempotent-replay']).toBe('true');
      expect({ status: again.status, body: again.body }).toEqual({
        status: answers[i]!.status,
        body: answers[i]!.body,
      });
    }
    expect(await count("SELECT COUNT(*) AS n FROM bets WHERE game = 'stock_race'")).toBe(placedBodies.length);
  }, 30_000);
});
