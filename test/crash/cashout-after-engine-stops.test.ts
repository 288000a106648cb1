import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { roundRepository } from '../../src/games/engine/round-repository';
import { client, eventually, KNOWN_CRASH_SEEDS, startTestApp, STORES, withSeeds } from '../support/harness';
import type { TestApp } from '../support/harness';

const WINDOW = 5_000;
// At a 100 ms tick the engine records a heartbeat every 250 ms; cash-outs need one at most 1 s old.
const STALE = 1_000;

/**
 * Surface A's view of a round whose engine stopped mid-round: the cash-out is a 409 in the surface's
 * error shape with a stable code, nothing is paid, and the next engine to take over refunds the bet.
 */
describe.each(STORES)('cash-out on a round whose engine is gone, on %s', (store) => {
  const clock = new FakeClock(Date.now());
  let t: TestApp;
  let call: ReturnType<typeof client>;

  beforeAll(async () => {
    t = await startTestApp({
      store,
      clock,
      env: { CRASH_BETTING_WINDOW_MS: String(WINDOW), CRASH_TICK_MS: '100', CRASH_PAUSE_MS: '1000' },
      beforeStart: withSeeds('crash', [KNOWN_CRASH_SEEDS.x377]),
    });
    call = client(t.baseUrl, await t.createOperator());
  });
  afterAll(async () => t?.close());

  const post = (path: string, body: unknown, key: string) =>
    call('POST', path, body, { idempotencyKey: key, timestamp: clock.now() });
  const betView = async (betId: string) =>
    (await call('GET', `/api/public/v1/bets/${betId}`, undefined, { timestamp: clock.now() })).body;
  const latest = async () => (await roundRepository.latest(t.app.db, 'crash'))!;

  it('answers 409 ROUND_INTERRUPTED, pays nothing, and the bet is refunded once the round is voided', async () => {
    await eventually(async () => (await latest())?.status === 'open');
    const placed = [];
    for (const player of ['early', 'late']) {
      const r = await post('/api/public/v1/place-bet', { external_user_id: player, amount: 500 }, `bet-${player}`);
      expect(r.status).toBe(200);
      placed.push(r.body.bet_id as string);
    }
    const [early, late] = placed as [string, string];
    await clock.advanceAsync(WINDOW);
    await eventually(async () => (await latest()).status === 'running');
    const runningAt = (await latest()).runningAt!;
    // The engine drives the round for 2 s, recording heartbeats as it goes.
    for (let i = 0; i < 20; i++) await clock.advanceAsync(100);
    const beat = await eventually(async () => {
      const at = (await latest()).heartbeatAt!;
      return at >= runningAt + 1_750 ? at : undefined;
    });
    const paid = await post('/api/public/v1/cashout', { bet_id: early }, 'cash-early');
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ bet_id: early, multiplier: 1.12, payout: 560 });

    // The engine dies; the wall clock, and with it the multiplier the start time implies, goes on.
    await t.app.services.engines.crash.stop();
    // The last heartbeat is read once the engine has stopped (stop() waits for the writes it queued):
    // the tick that recorded it may have landed after the one read above.
    const lastBeat = (await latest()).heartbeatAt!;
    expect(lastBeat).toBeGreaterThanOrEqual(beat);
    clock.advance(lastBeat + STALE + 1 - clock.now());
    const refused = await post('/api/public/v1/cashout', { bet_id: late }, 'cash-late');
    expect(refused.status).toBe(409);
    expect(Object.keys(refused.body).sort()).toEqual(['code', 'error']);
    expect(refused.body.code).toBe('ROUND_INTERRUPTED');
    expect(refused.body.error).toMatch(/round 1 is interrupted: its engine has not been heard from for 1001 ms/);
    clock.advance(60_000);
    const muchLater = await post('/api/public/v1/cashout', { bet_id: late }, 'cash-late-2');
    expect(muchLater.body.code).toBe('ROUND_INTERRUPTED');
    expect(await betView(late)).toMatchObject({ status: 'active', payout: null });

    // An engine takes the lease again (a restart, a standby): the round is voided, the stake returned.
    await t.app.services.engines.crash.start();
    expect(await betView(late)).toMatchObject({ status: 'void', payout: 500, multiplier: null });
    // A retry is signed afresh (a new timestamp): the same signed bytes again are a replay.
    clock.advance(1);
    const afterVoid = await post('/api/public/v1/cashout', { bet_id: late }, 'cash-late-3');
    expect(afterVoid.status).toBe(409);
    expect(afterVoid.body.code).toBe('BET_NOT_ACTIVE');
    expect(await betView(early)).toMatchObject({ status: 'cashed_out', payout: 560 });
  });
});
