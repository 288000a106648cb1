import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { multiplierAt } from '../../src/games/crash/multiplier';
import { roundRepository } from '../../src/games/engine/round-repository';
import { decidedLate } from '../support/slow-decision';
import { client, eventually, KNOWN_CRASH_SEEDS, startTestApp, withSeeds } from '../support/harness';
import type { SignedResponse, TestApp, TestOperator } from '../support/harness';

const WINDOW = 5_000;
const TICK = 100;

/** An app whose first Crash round plays `seed`, its engine on `clock`, with a minute's pause after it. */
function oneRoundApp(store: 'sqlite' | 'postgres', clock: FakeClock, seed: string): Promise<TestApp> {
  return startTestApp({
    store,
    clock,
    env: { CRASH_BETTING_WINDOW_MS: String(WINDOW), CRASH_TICK_MS: String(TICK), CRASH_PAUSE_MS: '60000' },
    beforeStart: withSeeds('crash', [seed]),
  });
}

/**
 * Crash money over Surface A on the 1.26x round of bustabit's published game, the engine on a fake
 * clock, on both stores: what an operator sees in place-bet, cash-out, GET of a bet and bet.settled.
 */
describe.each(['sqlite', 'postgres'] as const)('Crash money edges over Surface A (%s)', (store) => {
  const clock = new FakeClock(Date.now());
  let t: TestApp;
  let op: TestOperator;
  let call: ReturnType<typeof client>;
  let signed = 0;

  beforeAll(async () => {
    t = await oneRoundApp(store, clock, KNOWN_CRASH_SEEDS.x126);
    op = await t.createOperator();
    call = client(t.baseUrl, op);
  });
  afterAll(async () => t?.close());

  const post = (path: string, body: unknown, key: string): Promise<SignedResponse> =>
    call('POST', `/api/public/v1${path}`, body, { idempotencyKey: key, timestamp: clock.now() + signed++ });
  const raw = (path: string, rawBody: string, key: string): Promise<SignedResponse> =>
    call('POST', `/api/public/v1${path}`, undefined, {
      rawBody,
      idempotencyKey: key,
      timestamp: clock.now() + signed++,
    });
  const get = (path: string): Promise<SignedResponse> =>
    call('GET', `/api/public/v1${path}`, undefined, { timestamp: clock.now() + signed++ });
  const round1 = () => roundRepository.byNumber(t.app.db, 'crash', 1, null);

  it('auto_cashout forms: two decimals at most, echoed as sent, stored to the hundredth', async () => {
    await eventually(async () => (await round1())?.status === 'open');
    const accepted: [string, number][] = [
      ['2.1', 2.1],
      ['1e2', 100],
      ['1.01', 1.01],
      ['1000000', 1_000_000],
      ['1.010', 1.01],
      ['4.35', 4.35],
    ];
    for (const [text, value] of accepted) {
      const r = await raw('/place-bet', `{"external_user_id":"f","amount":100,"auto_cashout":${text}}`, `f-${text}`);
      expect(r.status, text).toBe(200);
      expect(r.body.auto_cashout).toBe(value);
      expect((await get(`/bets/${r.body.bet_id}`)).body).toMatchObject({ auto_cashout: value, status: 'active' });
    }
    for (const text of ['1.015', '1.005', '1', '1000000.01', '"2.1"', '-0', '1e400']) {
      const r = await raw('/place-bet', `{"external_user_id":"f","amount":100,"auto_cashout":${text}}`, `x-${text}`);
      expect(r.status, text).toBe(400);
      expect(r.body.code).toBe('VALIDATION_FAILED');
    }
  });

  // The cap a bet is paid under is stored with it when it is placed (bets/bet.ts). Before, a cash-out by
  // hand re-derived the bet's exit from max_payout_per_bet as it is now, and the engine from the settings
  // it read when the round started running: an operator lowering the cap below a stake in play made the
  // cap point 1.01x, already passed, so a cash-out asked for at 1.05x answered multiplier 1.01 and paid
  // the new cap (less than the stake, on a winning cash-out), and an auto target was forced out the same.
  it('a cap lowered after bets were placed cuts neither a cash-out by hand nor an auto cash-out', async () => {
    const bet = await post('/place-bet', { external_user_id: 'cap', amount: 1_000, auto_cashout: null }, 'cap-bet');
    const auto = await post('/place-bet', { external_user_id: 'cap', amount: 1_000, auto_cashout: 1.2 }, 'cap-auto');
    expect([bet.status, auto.status]).toEqual([200, 200]);
    await t.app.services.operators.updateSettings(op.id, { crash: { max_payout_per_bet: 500 } });
    await clock.advanceAsync(WINDOW);
    await eventually(async () => (await round1())?.status === 'running');
    const running = (await round1())!;
    for (let i = 0; i < 20 && clock.now() < running.runningAt! + 814; i++) await clock.advanceAsync(TICK);
    expect((await get('/rounds/current')).body.multiplier).toBeGreaterThanOrEqual(1.05);
    const out = await post('/cashout', { bet_id: bet.body.bet_id }, 'cap-out');
    expect(out.status).toBe(200);
    // What the curve showed when the cash-out was asked for, and at least the stake back.
    expect(out.body.multiplier).toBeGreaterThanOrEqual(1.05);
    expect(out.body.payout).toBe(Math.floor((1_000 * Math.round(out.body.multiplier * 100)) / 100));
    expect((await get(`/bets/${bet.body.bet_id}`)).body).toMatchObject({
      status: 'cashed_out',
      cashout_kind: 'manual',
      payout: out.body.payout,
    });
    // 1.20x comes at about 3.04 s into the round, before its 1.26x crash.
    for (let i = 0; i < 40 && clock.now() < running.runningAt! + 3_100; i++) await clock.advanceAsync(TICK);
    const paid = await eventually(async () => {
      const b = (await get(`/bets/${auto.body.bet_id}`)).body;
      return b.status === 'active' ? undefined : b;
    });
    expect(paid).toMatchObject({ status: 'cashed_out', cashout_kind: 'auto', multiplier: 1.2, payout: 1_200 });
  });
});

/**
 * A bet whose stake, or a cash-out whose payout, raises a compliance flag is decided on the full path,
 * after the one-unit command handed it over. Deciding takes time: here the clock jumps the moment the
 * compliance settings are read (no timer runs, so the engine does not move), as if the full path ran
 * after the betting window closed, or after the round crashed.
 */
describe.each(['sqlite', 'postgres'] as const)('bets and cash-outs decided on the full path (%s)', (store) => {
  const clock = new FakeClock(Date.now());
  let t: TestApp;
  let call: ReturnType<typeof client>;
  let signed = 0;

  beforeAll(async () => {
    t = await oneRoundApp(store, clock, KNOWN_CRASH_SEEDS.x377);
    const op = await t.createOperator({ settings: { compliance: { large_stake: 1, large_payout: 1 } } });
    call = client(t.baseUrl, op);
  });
  afterAll(async () => t?.close());

  const post = (path: string, body: unknown, key: string): Promise<SignedResponse> =>
    call('POST', `/api/public/v1${path}`, body, { idempotencyKey: key, timestamp: clock.now() + signed++ });
  const round1 = () => roundRepository.byNumber(t.app.db, 'crash', 1, null);

  async function jumpingWhileDecided<T>(ms: number, request: () => Promise<T>): Promise<T> {
    const { result, jumped } = await decidedLate(t, clock, (now) => now + ms, request);
    expect(jumped).toBe(true);
    return result;
  }

  let betId = '';

  it('takes a flagged bet asked for inside the betting window, however long writing it takes', async () => {
    await eventually(async () => (await round1())?.status === 'open');
    const open = (await round1())!;
    const askedAt = clock.now();
    expect(askedAt).toBeLessThan(open.bettingClosesAt);
    // Written just after the window closed (no further: the engine has not moved on yet).
    const bet = await jumpingWhileDecided(open.bettingClosesAt - askedAt + 1, () =>
      post('/place-bet', { external_user_id: 'big', amount: 1_000, auto_cashout: null }, 'big-bet'),
    );
    expect(bet.status, JSON.stringify(bet.body)).toBe(200);
    expect(bet.body).toMatchObject({ round_number: 1, amount: 1_000 });
    betId = bet.body.bet_id;
  });

  it('pays a flagged cash-out at the multiplier of when it was asked for, not of when it was decided', async () => {
    expect(betId).not.toBe('');
    await clock.advanceAsync(TICK);
    await eventually(async () => (await round1())?.status === 'running');
    const running = (await round1())!;
    for (let i = 0; i < 20 && clock.now() < running.runningAt! + 814; i++) await clock.advanceAsync(TICK);
    const askedAt = clock.now();
    // 30 s on is past the round's 3.77x crash (at about 22.1 s).
    const out = await jumpingWhileDecided(30_000, () => post('/cashout', { bet_id: betId }, 'big-out'));
    expect(out.status, JSON.stringify(out.body)).toBe(200);
    expect(out.body.multiplier).toBe(multiplierAt(askedAt - running.runningAt!) / 100);
    expect(out.body.multiplier).toBeGreaterThanOrEqual(1.05);
    expect(out.body.payout).toBe(Math.floor((1_000 * Math.round(out.body.multiplier * 100)) / 100));
  });
});
