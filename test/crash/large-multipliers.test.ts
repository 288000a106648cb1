import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { DEFAULT_BUSTABIT_SALT } from '../../src/config/game-defaults';
import { crashPointOf } from '../../src/games/crash/crash-rules';
import { elapsedForMultiplier, multiplierAt } from '../../src/games/crash/multiplier';
import { roundRepository } from '../../src/games/engine/round-repository';
import { client, eventually, STORES, startTestApp, withSeeds } from '../support/harness';
import type { SignedResponse, TestApp, TestOperator } from '../support/harness';
import { TestReceiver } from '../support/webhook-receiver';

/**
 * Crash multipliers past 2^31 - 1 hundredths (21,474,836.47x), where a 32-bit column ends. A seed's
 * crash point goes up to 2^53 - 1 hundredths (about one round in 22 million busts past 21.47 million x),
 * and a stake of 1 minor unit under a per-bet cap of 25,000,000 is forced out at 25,000,000.00x. An
 * auto cash-out target is capped by validation at 1,000,000x (100,000,000 hundredths) and a sandbox
 * script at 1,000,000x too, so a live round is the way there: its seed is a fixture that busts past
 * 25 million x. The engine runs on a fake clock; the operator's view is checked on both stores.
 */

/**
 * Found by hashing candidates (32 bytes: "large-multiplier", zeros, a counter) until one busts past
 * 30 million x with bustabit's salt and a 1% edge: it busts at 79,194,514.05x (checked below).
 */
const SEED = '6c617267652d6d756c7469706c6965720000000000000000000000000540969b';

const WINDOW = 5_000;
const TICK = 1_000;
/** The per-bet cap (minor units): a stake of 1 is forced out at 25,000,000.00x. */
const PER_BET_CAP = 25_000_000;
const CAP_POINT = 2_500_000_000;
/** A manual cash-out between the 32-bit limit and the cap point. */
const MANUAL_AT_MS = 282_000;
const INT32_MAX = 2 ** 31 - 1;

describe.each(STORES)('Crash cash-outs past 21,474,836.47x (%s)', (store) => {
  const clock = new FakeClock(Date.now());
  const receiver = new TestReceiver();
  let t: TestApp;
  let op: TestOperator;
  let call: ReturnType<typeof client>;
  let signed = 0;

  beforeAll(async () => {
    const hooks = await receiver.start();
    t = await startTestApp({
      store,
      clock,
      env: { CRASH_BETTING_WINDOW_MS: String(WINDOW), CRASH_TICK_MS: String(TICK), CRASH_PAUSE_MS: '600000' },
      beforeStart: withSeeds('crash', [SEED]),
    });
    op = await t.createOperator({
      settings: { crash: { max_payout_per_bet: PER_BET_CAP, max_payout_per_round: 1_000_000_000 } },
    });
    call = client(t.baseUrl, op);
    const endpoint = await post('/webhook-endpoints', { url: `${hooks}/hooks`, events: ['bet.settled'] });
    expect(endpoint.status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  function post(path: string, body: unknown, key?: string): Promise<SignedResponse> {
    return call('POST', `/api/public/v1${path}`, body, { idempotencyKey: key, timestamp: clock.now() + signed++ });
  }
  const get = (path: string): Promise<SignedResponse> =>
    call('GET', `/api/public/v1${path}`, undefined, { timestamp: clock.now() + signed++ });
  const round1 = () => roundRepository.byNumber(t.app.db, 'crash', 1, null);

  /**
   * Moves the clock to `elapsedMs` into the running round (rounded up to a tick: the engine ticks every
   * TICK from the instant the round ran) and waits for the engine to catch up: a heartbeat within the
   * last tick means the tick at the new time has run (or had nothing left to record), so the exits due
   * by then are paid and a cash-out finds the round alive.
   */
  async function runUntil(runningAt: number, elapsedMs: number): Promise<void> {
    const target = runningAt + Math.ceil(elapsedMs / TICK) * TICK;
    while (clock.now() < target) {
      await clock.advanceAsync(Math.min(20 * TICK, target - clock.now()));
      const now = clock.now();
      const caughtUp = async () => ((await round1())?.heartbeatAt ?? 0) > now - TICK;
      await eventually(caughtUp, 10_000, 20, `heartbeat at ${now}`);
    }
  }

  it('pays a manual, an automatic and a forced cash-out past 2^31 - 1 hundredths, and closes the round', async () => {
    const crash = crashPointOf(SEED, DEFAULT_BUSTABIT_SALT, 100);
    expect(crash).toBeGreaterThan(CAP_POINT);
    expect(CAP_POINT).toBeGreaterThan(INT32_MAX);
    expect(multiplierAt(MANUAL_AT_MS)).toBeGreaterThan(INT32_MAX);
    expect(elapsedForMultiplier(CAP_POINT)).toBeGreaterThan(MANUAL_AT_MS);

    await eventually(async () => (await round1())?.status === 'open');
    const place = (name: string, auto: number | null) =>
      post('/place-bet', { external_user_id: name, amount: 1, auto_cashout: auto }, `bet-${name}`);
    const manual = await place('manual', null);
    const forced = await place('forced', null);
    // The highest target place-bet accepts: 100,000,000 hundredths still fit 32 bits.
    const auto = await place('auto', 1_000_000);
    expect([manual.status, forced.status, auto.status]).toEqual([200, 200, 200]);

    await clock.advanceAsync(WINDOW);
    await eventually(async () => (await round1())?.status === 'running');
    const runningAt = (await round1())!.runningAt!;

    // Soft assertions from here: each shows what the operator sees, and the round goes on either way.
    await runUntil(runningAt, MANUAL_AT_MS);
    const at = multiplierAt(clock.now() - runningAt);
    const out = await post('/cashout', { bet_id: manual.body.bet_id }, 'cash-manual');
    expect.soft({ status: out.status, body: out.body }).toEqual({
      status: 200,
      body: { bet_id: manual.body.bet_id, payout: Math.floor(at / 100), multiplier: at / 100 },
    });

    // Past the cap point, where the engine forces the bet still in out. A tick that cannot write its
    // exits records no heartbeat either: runUntil then gives up, and the bet below shows why.
    await runUntil(runningAt, elapsedForMultiplier(CAP_POINT)).catch(() => {});
    const forcedBet = await eventually(async () => {
      const b = (await get(`/bets/${forced.body.bet_id}`)).body;
      return b?.status === 'active' ? undefined : b;
    }, 3_000).catch(async () => (await get(`/bets/${forced.body.bet_id}`)).body);
    expect.soft(forcedBet).toMatchObject({ status: 'cashed_out', multiplier: 25_000_000, payout: PER_BET_CAP });

    // Past the crash point: the round closes and shows it.
    await clock.advanceAsync(runningAt + elapsedForMultiplier(crash) + TICK - clock.now());
    const closed = await eventually(async () => {
      const r = await get('/rounds/1');
      return r.body?.status === 'closed' ? r.body : undefined;
    }, 5_000).catch(async () => (await get('/rounds/1')).body);
    expect.soft(closed).toMatchObject({ status: 'closed', outcome: { crash_point: crash / 100 } });

    const expected = {
      [manual.body.bet_id]: { cashout_kind: 'manual', multiplier: at / 100, payout: Math.floor(at / 100) },
      [forced.body.bet_id]: { cashout_kind: 'forced', multiplier: 25_000_000, payout: PER_BET_CAP },
      [auto.body.bet_id]: { cashout_kind: 'auto', multiplier: 1_000_000, payout: 1_000_000 },
    };
    for (const [betId, result] of Object.entries(expected)) {
      const bet = await get(`/bets/${betId}`);
      expect.soft({ status: bet.status, body: bet.body }).toMatchObject({
        status: 200,
        body: { bet_id: betId, amount: 1, status: 'cashed_out', ...result },
      });
    }

    await t.app.services.webhooks.dispatcher.drain();
    const settledEvents = () =>
      receiver.received.map((r) => JSON.parse(r.body)).filter((e) => e.type === 'bet.settled');
    const settled = await eventually(async () => settledEvents().length >= 3 && settledEvents(), 3_000).catch(
      settledEvents,
    );
    const byBet = Object.fromEntries(
      settled.map((e: { data: Record<string, unknown> }) => [
        e.data.bet_id,
        { cashout_kind: e.data.cashout_kind, multiplier: e.data.multiplier, payout: e.data.payout },
      ]),
    );
    expect(byBet).toEqual(expected);
  });
});
