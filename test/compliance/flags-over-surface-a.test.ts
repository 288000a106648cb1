import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { roundRepository } from '../../src/games/engine/round-repository';
import { client, eventually, KNOWN_CRASH_SEEDS, startTestApp, withSeeds } from '../support/harness';
import type { SignedResponse, TestApp, TestOperator } from '../support/harness';

const WINDOW = 5_000;
const TICK = 100;

/**
 * The compliance rules as an operator's risk team meets them over Surface A, on both stores: the
 * engine on a fake clock, one 3.77x Crash round (bustabit's published game) with a long pause after it.
 */
describe.each(['sqlite', 'postgres'] as const)('compliance edges over Surface A (%s)', (store) => {
  const clock = new FakeClock(Date.now());
  let t: TestApp;
  let signed = 0;

  beforeAll(async () => {
    t = await startTestApp({
      store,
      clock,
      env: { CRASH_BETTING_WINDOW_MS: String(WINDOW), CRASH_TICK_MS: String(TICK), CRASH_PAUSE_MS: '60000' },
      beforeStart: withSeeds('crash', [KNOWN_CRASH_SEEDS.x377]),
    });
  });
  afterAll(async () => t?.close());

  const as = (op: TestOperator) => {
    const call = client(t.baseUrl, op);
    return {
      post: (path: string, body: unknown, key: string): Promise<SignedResponse> =>
        call('POST', `/api/public/v1${path}`, body, { idempotencyKey: key, timestamp: clock.now() + signed++ }),
      get: (path: string): Promise<SignedResponse> =>
        call('GET', `/api/public/v1${path}`, undefined, { timestamp: clock.now() + signed++ }),
    };
  };
  const round1 = () => roundRepository.byNumber(t.app.db, 'crash', 1, null);
  const bet = (player: string, amount = 100) => ({ external_user_id: player, amount, auto_cashout: null });

  // One flag per player per minute (docs/webhooks.md). Bets of one player that arrive together and pass
  // the limit all take the full path; on PostgreSQL each transaction counted only committed bets and
  // checked for a flag before the others committed theirs: one burst raised four bet_velocity flags
  // (and four compliance.flag webhooks), each claiming 3 bets in the minute.
  it('raises one bet_velocity flag for a burst of bets over the limit, however they interleave', async () => {
    await eventually(async () => (await round1())?.status === 'open');
    const op = await t.createOperator({ settings: { compliance: { bets_per_minute_per_player: 2 } } });
    const api = as(op);
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) => api.post('/place-bet', bet('burst'), `burst-${i}`)),
    );
    expect(burst.map((r) => r.status)).toEqual(Array(12).fill(200));
    const { flags } = (await api.get('/compliance/flags?rule=bet_velocity')).body;
    expect(flags).toHaveLength(1);
    expect(flags[0]).toMatchObject({ rule: 'bet_velocity', player: 'burst', game: 'crash' });
    expect(flags[0].details.bets_in_last_minute).toBeGreaterThan(2);
    const events = await t.app.db.all<{ id: string }>(
      `SELECT id FROM events WHERE operator_id = ? AND type = 'compliance.flag'`,
      [op.id],
    );
    expect(events).toHaveLength(1);
    // A replay of a flagged bet answers what it answered, and raises nothing again.
    const again = await api.post('/place-bet', bet('burst'), 'burst-11');
    expect([again.status, again.body.bet_id]).toEqual([200, burst[11]!.body.bet_id]);
    expect((await api.get('/compliance/flags')).body.flags).toHaveLength(1);
  });

  // Sessions opened from two new places at the same moment (the page and its feed, from two hosts).
  // On PostgreSQL each check counted only its own place (the other's not yet committed): 1 place each,
  // so a session used from two places at once could raise no flag at all.
  it('flags every session first seen from two places at the same moment, once', async () => {
    const op = await t.createOperator();
    const sessions = Array.from({ length: 16 }, (_, i) => `sess-both-${store}-${i}`);
    const seen = (sessionId: string, place: string) =>
      t.app.services.complianceFlags.sessionSeen({
        operatorId: op.id,
        sessionId,
        player: sessionId,
        place,
        now: clock.now(),
        game: 'stock_race',
      });
    const found = await Promise.all(sessions.flatMap((s) => [seen(s, '198.51.100.7'), seen(s, '203.0.113.9')]));
    expect(found.filter(Boolean)).toHaveLength(sessions.length);
    const B = client(t.baseUrl, op, 'B');
    const listed = await B('GET', '/v1/compliance/flags', undefined, { timestamp: clock.now() + signed++ });
    expect(listed.status).toBe(200);
    expect(listed.body.flags.map((f: { player: string }) => f.player).sort()).toEqual([...sessions].sort());
    for (const f of listed.body.flags) {
      expect(f).toMatchObject({ rule: 'session_multi_place', details: { places: 2, threshold: 1 } });
    }
  });

  // The settings allow counts up to 2^53 - 1, and "never in practice" is a fair way to switch a rule
  // off without 0. PostgreSQL's one-unit bet commands took the count as an `integer`: every bet of
  // such an operator answered 500 INTERNAL ("integer out of range"), and every manual cash-out too.
  it('takes bets and cash-outs of an operator whose velocity or streak threshold is above 2^31', async () => {
    await eventually(async () => (await round1())?.status === 'open');
    const velocity = as(await t.createOperator({ settings: { compliance: { bets_per_minute_per_player: 3e9 } } }));
    const streak = as(await t.createOperator({ settings: { compliance: { machine_timing_streak: 2 ** 40 } } }));
    const placed = await velocity.post('/place-bet', bet('huge-v'), 'huge-v');
    expect(placed.status, placed.text).toBe(200);
    const timed = await streak.post('/place-bet', bet('huge-s'), 'huge-s');
    expect(timed.status, timed.text).toBe(200);
    // A second bet in the same minute: the count is read, and the threshold still far away.
    expect((await velocity.post('/place-bet', bet('huge-v'), 'huge-v2')).status).toBe(200);
    expect((await velocity.get('/compliance/flags')).body).toEqual({ flags: [], has_more: false });

    await clock.advanceAsync(WINDOW);
    await eventually(async () => (await round1())?.status === 'running');
    for (let i = 0; i < 10; i++) await clock.advanceAsync(TICK);
    const out = await streak.post('/cashout', { bet_id: timed.body.bet_id }, 'huge-s-out');
    expect(out.status, out.text).toBe(200);
    expect(out.body.payout).toBeGreaterThan(100);
    expect((await streak.get(`/bets/${timed.body.bet_id}`)).body).toMatchObject({ status: 'cashed_out' });
    expect((await streak.get('/compliance/flags')).body).toEqual({ flags: [], has_more: false });
  });
});
