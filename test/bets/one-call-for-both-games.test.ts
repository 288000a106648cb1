import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roundRepository } from '../../src/games/engine/round-repository';
import type { SqlParam } from '../../src/store/database';
import {
  aroundPrepared,
  client,
  eventually,
  startTestApp,
  STORES,
  type TestApp,
  type TestOperator,
} from '../support/harness';

const PLACE_CALLS = new Set(['rbs_place_bet', 'rbs_place_bets']);

/**
 * On PostgreSQL an instance keeps one bet call in flight, whichever game the bets are for: Crash
 * place-bets (Surface A) and Stock Race reservations (Surface B) queue behind the same call and go
 * out together in the next one. Two calls at once would split the queue into smaller transactions,
 * which measured slower; this holds only if both games share one BetCommands.
 */
describe.runIf(STORES.includes('postgres'))('bet calls of both games on postgres', () => {
  let t: TestApp;
  let op: TestOperator;
  let inFlight = 0;
  let maxInFlight = 0;
  /** The games of the bets each rbs_place_bets call carried. */
  const batchedGames: string[][] = [];
  /** Set: the next bet call is held this long, so that the bets sent with it queue behind it. */
  let holdNextMs = 0;

  beforeAll(async () => {
    t = await startTestApp({
      store: 'postgres',
      env: {
        CRASH_BETTING_WINDOW_MS: '60000',
        STOCK_RACE_BETTING_WINDOW_MS: '60000',
      },
      beforeStart: async (store) =>
        aroundPrepared(store, async (name, params, proceed) => {
          if (!PLACE_CALLS.has(name)) return proceed();
          if (name === 'rbs_place_bets')
            batchedGames.push((JSON.parse(String(params[0])) as SqlParam[][]).map((args) => String(args[7])));
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          try {
            if (holdNextMs > 0) {
              const ms = holdNextMs;
              holdNextMs = 0;
              await new Promise((r) => setTimeout(r, ms));
            }
            return await proceed();
          } finally {
            inFlight--;
          }
        }),
    });
    op = await t.createOperator();
  });
  afterAll(async () => t?.close());

  it('sends Crash bets and Stock Race reservations through one call at a time, together', async () => {
    const surfaceA = client(t.baseUrl, op, 'A');
    const surfaceB = client(t.baseUrl, op, 'B');
    await eventually(async () => (await surfaceA('GET', '/api/public/v1/rounds/current')).body?.status === 'open');
    const stockRound = await eventually(async () => {
      const round = await roundRepository.latest(t.app.db, 'stock_race');
      return round?.status === 'open' ? round : undefined;
    });
    const sessions: string[] = [];
    for (let i = 0; i < 6; i++) {
      const launched = await surfaceB('POST', '/v1/sessions/launch', {
        player_ref: `race-${i}`,
        currency: 'EUR',
        return_url: 'https://op.example/',
      });
      expect(launched.status).toBe(200);
      sessions.push(launched.body.session_id);
    }

    // The first bet's call is held: every request sent with it queues behind it.
    holdNextMs = 1_000;
    const first = surfaceA(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'crash-first', amount: 500 },
      { idempotencyKey: randomUUID() },
    );
    await eventually(async () => inFlight === 1, 5_000, 5);
    const crash = Array.from({ length: 6 }, (_, i) =>
      surfaceA(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: `crash-${i}`, amount: 1_000 + i },
        { idempotencyKey: randomUUID() },
      ),
    );
    const race = sessions.map((sessionId, i) =>
      surfaceB('POST', '/v1/bets/reserve', {
        session_id: sessionId,
        round_id: stockRound!.id,
        selected_stocks: ['NVDA'],
        stake: 2 + i,
        idempotency_key: randomUUID(),
      }),
    );
    const answers = await Promise.all([first, ...crash, ...race]);

    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(answers.slice(1, 7).map((a) => a.body.amount)).toEqual([1000, 1001, 1002, 1003, 1004, 1005]);
    expect(answers.slice(7).map((a) => a.body.stake)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(maxInFlight).toBe(1);
    // The bets that queued behind the held call left in shared calls: both games in one of them.
    const mixed = batchedGames.filter((games) => games.includes('crash') && games.includes('stock_race'));
    expect(mixed.length).toBeGreaterThan(0);
    const placed = await t.app.db.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM bets WHERE operator_id = ? AND (player LIKE 'crash-%' OR player LIKE 'race-%')",
      [op.id],
    );
    expect(Number(placed!.n)).toBe(13);
  });
});
