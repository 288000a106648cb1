import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { client, startTestApp, STORES, type TestApp, type TestOperator, advanceUntil } from '../support/harness';
import { TestReceiver } from '../support/webhook-receiver';

/**
 * Test mode end to end over HTTP: sandbox operators play in rounds of their own, script outcomes,
 * run fast rounds and settle against the simulated wallet; live rounds, figures and flags never move.
 * Time is a FakeClock moved in steps, so a 100x crash (77 s of curve) costs no real waiting.
 */
describe.each(STORES)('sandbox (test mode) on %s', (store) => {
  const clock = new FakeClock(Date.now());
  const logLines: Record<string, unknown>[] = [];
  const receiver = new TestReceiver();
  let t: TestApp;
  let live: TestOperator;
  let test: TestOperator;
  let liveA: ReturnType<typeof client>;
  let testA: ReturnType<typeof client>;
  let liveB: ReturnType<typeof client>;
  let testB: ReturnType<typeof client>;

  // Every request signed at the service's (fake) time.
  const at =
    (c: ReturnType<typeof client>) =>
    (method: string, path: string, body?: unknown, extra: { idempotencyKey?: string } = {}) =>
      c(method, path, body, { ...extra, timestamp: clock.now() });

  const until = <T>(check: () => Promise<T | undefined | false>, stepMs = 500, maxSteps = 400): Promise<T> =>
    advanceUntil(clock, check, stepMs, maxSteps);

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean))
          logLines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    t = await startTestApp({
      store,
      clock,
      logger: pino({ level: 'warn' }, sink),
      env: {
        CRASH_TICK_MS: '500',
        STOCK_RACE_TICK_MS: '500',
        WALLET_RETRY_SCHEDULE_MS: '0,1000,1000',
        OUTBOX_POLL_MS: '200',
      },
    });
    const strict = {
      compliance: {
        large_stake: 1,
        large_payout: 1,
        bets_per_minute_per_player: 120,
        machine_timing_window_ms: 15,
        machine_timing_streak: 5,
        max_session_places: 1,
        session_places_window_ms: 600_000,
      },
    };
    live = await t.createOperator({ name: 'Live casino', settings: strict });
    test = await t.createOperator({ name: 'Casino (test)', mode: 'test', settings: strict });
    liveA = at(client(t.baseUrl, live));
    testA = at(client(t.baseUrl, test));
    liveB = at(client(t.baseUrl, live, 'B'));
    testB = at(client(t.baseUrl, test, 'B'));
    const hooks = await receiver.start();
    const events = ['round.opened', 'round.closed', 'bet.settled', 'compliance.flag'];
    for (const [call, path] of [
      [liveA, '/live'],
      [testA, '/test'],
    ] as const) {
      const r = await call('POST', '/api/public/v1/webhook-endpoints', { url: `${hooks}${path}`, events });
      expect(r.status).toBe(201);
    }
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  const liveFigures = async () => ({
    rounds: await t.app.db.all<{ round_number: number }>(
      `SELECT round_number FROM rounds WHERE operator_id IS NULL AND game = 'crash' ORDER BY round_number`,
    ),
    bets: await t.app.db.all<{ id: string; operator_id: string }>(
      `SELECT b.id, b.operator_id FROM bets b JOIN rounds r ON r.id = b.round_id
       WHERE r.operator_id IS NULL ORDER BY b.id`,
    ),
    flags: await t.app.db.all<{ operator_id: string }>('SELECT operator_id FROM compliance_flags ORDER BY id'),
  });

  it('gives test keys; a live key gets 403 SANDBOX_ONLY on every sandbox call, logged', async () => {
    expect(test.apiKey).toMatch(/^pk_test_/);
    expect(test.apiSecret).toMatch(/^sk_test_/);
    expect(live.apiKey).not.toMatch(/test/);

    const a = await liveA('POST', '/api/public/v1/sandbox/crash/next-outcomes', { crash_points: [1] });
    expect(a.status).toBe(403);
    expect(a.body).toEqual({
      error: 'sandbox calls need a test-mode key (pk_test_…); this key is live',
      code: 'SANDBOX_ONLY',
    });
    const b = await liveB('POST', '/v1/sandbox/stock-race/next-outcomes', { winners: ['NVDA'] });
    expect([b.status, b.body.error]).toEqual([403, 'SANDBOX_ONLY']);
    // Refused before validation: a live key learns nothing about the body it sent.
    const c = await liveB('POST', '/v1/sandbox/wallet/failures', { mode: 'bogus' });
    expect([c.status, c.body.error]).toEqual([403, 'SANDBOX_ONLY']);
    const refusals = logLines.filter((l) => l.msg === 'refused a sandbox call made with a live key');
    expect(refusals.map((l) => [l.operator_id, l.path])).toEqual([
      [live.id, '/api/public/v1/sandbox/crash/next-outcomes'],
      [live.id, '/v1/sandbox/stock-race/next-outcomes'],
      [live.id, '/v1/sandbox/wallet/failures'],
    ]);
  });

  it('puts test-key bets in a sandbox round, never a live one, and out of live figures and flags', async () => {
    const liveRound = await until(async () => {
      const r = await liveA('GET', '/api/public/v1/rounds/current');
      return r.body?.status === 'open' ? r.body : undefined;
    });
    expect(liveRound.livemode).toBe(true);
    const liveBet = await liveA(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'p', amount: 100 },
      { idempotencyKey: randomUUID() },
    );
    expect(liveBet.status).toBe(200);
    expect(liveBet.body.livemode).toBeUndefined();
    const before = await liveFigures();
    expect(before.bets.map((b) => b.id)).toEqual([liveBet.body.bet_id]);
    expect(before.flags.map((f) => f.operator_id)).toEqual([live.id]);

    const timing = await testA('POST', '/api/public/v1/sandbox/timing', {
      crash: { betting_window_ms: 1000, pause_ms: 100 },
    });
    expect(timing.status).toBe(200);
    expect(timing.body.crash).toEqual({ betting_window_ms: 1000, pause_ms: 100 });

    const placed = await testA(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'p', amount: 100 },
      { idempotencyKey: randomUUID() },
    );
    expect(placed.status).toBe(200);
    expect(placed.body).toMatchObject({ livemode: false, round_number: 1 });
    const bet = await testA('GET', `/api/public/v1/bets/${placed.body.bet_id}`);
    expect(bet.body.livemode).toBe(false);
    expect(bet.body.round_id).not.toBe(liveRound.round_id);
    const sandboxRound = await testA('GET', '/api/public/v1/rounds/current');
    expect(sandboxRound.body).toMatchObject({ round_id: bet.body.round_id, livemode: false, scripted: false });
    // The sandbox runs its own timing: a 1 s betting window.
    expect(sandboxRound.body.betting_closes_at - sandboxRound.body.opened_at).toBe(1000);

    // A live key cannot reach the sandbox round; a test key cannot touch the live bet.
    const liveView = await liveA('GET', '/api/public/v1/rounds/1');
    expect(liveView.body.round_id).toBe(liveRound.round_id);
    const cashLive = await testA(
      'POST',
      '/api/public/v1/cashout',
      { bet_id: liveBet.body.bet_id },
      { idempotencyKey: randomUUID() },
    );
    expect([cashLive.status, cashLive.body.code]).toEqual([404, 'BET_NOT_FOUND']);
    const fair = await liveA('GET', `/fairness/rounds/${bet.body.round_id}`);
    expect(fair.status).toBe(404);

    const after = await liveFigures();
    expect(after.bets).toEqual(before.bets);
    expect(after.flags).toEqual(before.flags);
  });

  it('plays scripted crash points exactly: 1.00 loses everything, 100x pays auto cash-outs to the unit', async () => {
    const liveBefore = await liveFigures();
    const scripted = await testA('POST', '/api/public/v1/sandbox/crash/next-outcomes', { crash_points: [1, 100] });
    expect(scripted.status).toBe(200);
    expect(scripted.body).toEqual({
      livemode: false,
      game: 'crash',
      pending: [{ crash_point: 1 }, { crash_point: 100 }],
    });

    const place = async (amount: number, auto: number | null) =>
      until(async () => {
        const r = await testA(
          'POST',
          '/api/public/v1/place-bet',
          { external_user_id: 'p', amount, auto_cashout: auto },
          { idempotencyKey: randomUUID() },
        );
        return r.status === 200 ? r.body : undefined;
      }, 100);
    const settled = (betId: string) =>
      until(async () => {
        const r = await testA('GET', `/api/public/v1/bets/${betId}`);
        return r.body.status !== 'active' ? r.body : undefined;
      });

    // The round the previous test's bet is in takes the first script (it has a bet).
    const lostAtOne = await place(1000, 1.01);
    const lost = await settled(lostAtOne.bet_id);
    expect(lost).toMatchObject({ status: 'lost', payout: 0 });
    const roundOne = await testA('GET', `/api/public/v1/rounds/${lost.round_number}`);
    expect(roundOne.body).toMatchObject({
      status: 'closed',
      outcome: { crash_point: 1 },
      scripted: true,
      livemode: false,
    });

    const fifty = await place(1000, 50);
    const exact = await testA(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'q', amount: 7, auto_cashout: 100 },
      { idempotencyKey: randomUUID() },
    );
    const above = await testA(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'q', amount: 9, auto_cashout: 100.01 },
      { idempotencyKey: randomUUID() },
    );
    expect([exact.body.round_number, above.body.round_number]).toEqual([fifty.round_number, fifty.round_number]);
    const paidFifty = await settled(fifty.bet_id);
    expect(paidFifty).toMatchObject({ status: 'cashed_out', payout: 50_000, multiplier: 50, cashout_kind: 'auto' });
    const paidExact = await settled(exact.body.bet_id);
    expect(paidExact).toMatchObject({ status: 'cashed_out', payout: 700, multiplier: 100 });
    expect(await settled(above.body.bet_id)).toMatchObject({ status: 'lost', payout: 0 });
    const round = await testA('GET', `/api/public/v1/rounds/${fifty.round_number}`);
    expect(round.body).toMatchObject({ outcome: { crash_point: 100 }, scripted: true });
    expect((await testA('GET', '/api/public/v1/sandbox/crash/next-outcomes')).body.pending).toEqual([]);

    // Live rounds kept their own numbering and bets; nothing was flagged for the sandbox.
    const liveAfter = await liveFigures();
    expect(liveAfter.rounds.map((r) => Number(r.round_number))).toEqual(liveAfter.rounds.map((_, i) => i + 1));
    expect(liveAfter.bets).toEqual(liveBefore.bets);
    expect(liveAfter.flags).toEqual(liveBefore.flags);
  });

  it('plays a scripted Stock Race winner, settled by the simulated wallet through an outage', async () => {
    await testB('POST', '/v1/sandbox/timing', {
      stock_race: { betting_window_ms: 1000, race_ms: 1000, pause_ms: 100 },
    });
    const balance = await testB('POST', '/v1/sandbox/wallet/balances', {
      player_ref: 'p1',
      currency: 'EUR',
      balance: 100,
    });
    expect(balance.body).toEqual({ livemode: false, player_ref: 'p1', currency: 'EUR', balance: 100 });
    const script = await testB('POST', '/v1/sandbox/stock-race/next-outcomes', { winners: ['NVDA'] });
    expect(script.body.pending).toEqual([{ winner: 'NVDA' }]);
    // The wallet answers 500 twice, then recovers.
    const outage = await testB('POST', '/v1/sandbox/wallet/failures', { mode: 'error_500', count: 2 });
    expect(outage.body).toEqual({ livemode: false, mode: 'error_500', remaining: 2 });

    const session = await testB('POST', '/v1/sessions/launch', {
      player_ref: 'p1',
      currency: 'EUR',
      return_url: 'https://op.example/',
    });
    const reserved = await until(async () => {
      const round = await testB('GET', '/v1/rounds/current');
      if (round.body.status !== 'open') return undefined;
      expect(round.body.livemode).toBe(false);
      const r = await testB('POST', '/v1/bets/reserve', {
        session_id: session.body.session_id,
        round_id: round.body.round_id,
        selected_stocks: ['NVDA'],
        stake: 10,
        idempotency_key: randomUUID(),
      });
      return r.status === 200 ? r.body : undefined;
    }, 100);
    expect(reserved).toMatchObject({ livemode: false, stake: 10, potential_payout: 76 });
    expect((await testB('GET', '/v1/sandbox/wallet/balances/p1')).body.balances).toEqual([
      { player_ref: 'p1', currency: 'EUR', balance: 90 },
    ]);

    // A live key cannot reach the sandbox round, nor bet in it; a test key cannot bet in a live round.
    expect((await liveB('GET', `/v1/rounds/${reserved.round_id}`)).status).toBe(404);
    const liveSession = await liveB('POST', '/v1/sessions/launch', {
      player_ref: 'lp',
      currency: 'EUR',
      return_url: 'https://op.example/',
    });
    const intoSandbox = await liveB('POST', '/v1/bets/reserve', {
      session_id: liveSession.body.session_id,
      round_id: reserved.round_id,
      selected_stocks: ['NVDA'],
      stake: 10,
      idempotency_key: randomUUID(),
    });
    expect([intoSandbox.status, intoSandbox.body.error]).toEqual([404, 'ROUND_NOT_FOUND']);
    const liveRace = await until(async () => {
      const r = await liveB('GET', '/v1/rounds/current');
      return r.status === 200 ? r.body : undefined;
    });
    expect(liveRace.livemode).toBe(true);
    const intoLive = await testB('POST', '/v1/bets/reserve', {
      session_id: session.body.session_id,
      round_id: liveRace.round_id,
      selected_stocks: ['NVDA'],
      stake: 10,
      idempotency_key: randomUUID(),
    });
    expect([intoLive.status, intoLive.body.error]).toEqual([404, 'ROUND_NOT_FOUND']);
    expect((await testB('GET', `/v1/rounds/${liveRace.round_id}`)).status).toBe(404);

    const done = await until(async () => {
      const r = await testB('GET', `/v1/bets/${reserved.bet_id}`);
      return r.body.settlement?.status === 'delivered' ? r.body : undefined;
    });
    // 10.00 on 1 of 8 stocks at 95 %: 10 × 8 × 0.95 = 76.00, after two refused attempts.
    expect(done).toMatchObject({
      status: 'won',
      payout: 76,
      livemode: false,
      settlement: { status: 'delivered', attempts: 3 },
    });
    const round = await testB('GET', `/v1/rounds/${reserved.round_id}`);
    expect(round.body).toMatchObject({ outcome: { winner: 'NVDA' }, scripted: true, livemode: false });
    const attempts = await t.app.db.all<{ status_code: number | null }>(
      'SELECT status_code FROM wallet_attempts WHERE bet_id = ? ORDER BY attempt',
      [reserved.bet_id],
    );
    expect(attempts.map((a) => a.status_code)).toEqual([500, 500, 200]);
    expect((await testB('GET', '/v1/sandbox/wallet/balances/p1')).body.balances).toEqual([
      { player_ref: 'p1', currency: 'EUR', balance: 166 },
    ]);
  });

  it('a simulated timeout applies the settlement once: the retry is answered without crediting twice', async () => {
    await testB('POST', '/v1/sandbox/wallet/failures', { mode: 'timeout', count: 1 });
    await testB('POST', '/v1/sandbox/stock-race/next-outcomes', { winners: ['AAPL'] });
    const session = await testB('POST', '/v1/sessions/launch', {
      player_ref: 'p1',
      currency: 'EUR',
      return_url: 'https://op.example/',
    });
    const reserved = await until(async () => {
      const round = await testB('GET', '/v1/rounds/current');
      if (round.body.status !== 'open') return undefined;
      const r = await testB('POST', '/v1/bets/reserve', {
        session_id: session.body.session_id,
        round_id: round.body.round_id,
        selected_stocks: ['AAPL', 'MSFT'],
        stake: 20,
        idempotency_key: randomUUID(),
      });
      return r.status === 200 ? r.body : undefined;
    }, 100);
    const done = await until(async () => {
      const r = await testB('GET', `/v1/bets/${reserved.bet_id}`);
      return r.body.settlement?.status === 'delivered' ? r.body : undefined;
    });
    // 20.00 on 2 of 8 at 95 %: 20 × 4 × 0.95 = 76.00.
    expect(done).toMatchObject({ status: 'won', payout: 76, settlement: { attempts: 2 } });
    const attempts = await t.app.db.all<{ status_code: number | null; error: string | null }>(
      'SELECT status_code, error FROM wallet_attempts WHERE bet_id = ? ORDER BY attempt',
      [reserved.bet_id],
    );
    expect(attempts.map((a) => a.status_code)).toEqual([null, 200]);
    expect(attempts[0]!.error).toMatch(/outcome unknown/);
    // 166 - 20 + 76 once.
    expect((await testB('GET', '/v1/sandbox/wallet/balances/p1')).body.balances).toEqual([
      { player_ref: 'p1', currency: 'EUR', balance: 222 },
    ]);
  });

  it('marks a sandbox dashboard TEST with only its rounds; a live dashboard never shows them', async () => {
    const auth = t.app.services.dashboardUsers;
    const signIn = async (operatorId: string, email: string) => {
      await auth.createUser({ operatorId, email, password: 'long enough password' });
      const jar: string[] = [];
      const go = async (method: string, path: string, form?: Record<string, string>) => {
        const res = await fetch(`${t.baseUrl}${path}`, {
          method,
          redirect: 'manual',
          headers: { cookie: jar.join('; '), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
          body: form ? new URLSearchParams(form) : undefined,
        });
        for (const c of res.headers.getSetCookie()) jar.push(c.split(';')[0]!);
        return res.text();
      };
      const login = await go('GET', '/dashboard/login');
      const csrf = /name="_csrf" value="([^"]+)"/.exec(login)![1]!;
      await go('POST', '/dashboard/login', {
        _csrf: csrf,
        email,
        password: 'long enough password',
        next: '/dashboard',
      });
      return go;
    };
    const sandboxRounds = await t.app.db.all<{ id: string }>('SELECT id FROM rounds WHERE operator_id = ?', [test.id]);
    expect(sandboxRounds.length).toBeGreaterThan(0);

    const asTest = await signIn(test.id, 'test@casino.example');
    const testPage = await asTest('GET', '/dashboard/rounds?game=crash');
    expect(testPage).toContain('class="badge badge-test"');
    expect(testPage).toContain('scripted outcome');
    expect(testPage).not.toContain('/fairness/rounds/');
    const asLive = await signIn(live.id, 'live@casino.example');
    const livePage = await asLive('GET', '/dashboard/rounds');
    expect(livePage).not.toContain('badge-test');
    for (const r of sandboxRounds) expect(livePage).not.toContain(r.id.slice(0, 14));
  });

  it('delivers sandbox events to the sandbox endpoint with livemode false, and none to a live endpoint', async () => {
    const sandboxRounds = new Set(
      (await t.app.db.all<{ id: string }>('SELECT id FROM rounds WHERE operator_id = ?', [test.id])).map((r) => r.id),
    );
    const bodies = (path: string) => receiver.on(path).map((r) => JSON.parse(r.body) as Record<string, any>);
    const got = await until(async () => {
      const mine = bodies('/test');
      return mine.some((b) => b.type === 'bet.settled') && mine.some((b) => b.type === 'round.closed')
        ? mine
        : undefined;
    }, 250);
    expect(got.every((b) => b.livemode === false)).toBe(true);
    expect(got.every((b) => sandboxRounds.has(b.data.round_id))).toBe(true);
    const live = bodies('/live');
    expect(live.length).toBeGreaterThan(0);
    expect(live.every((b) => b.livemode === true)).toBe(true);
    expect(live.filter((b) => sandboxRounds.has(b.data.round_id))).toEqual([]);
  });

  it('sandbox webhooks say livemode false; live endpoints never hear of sandbox rounds', async () => {
    const events = await t.app.db.all<{ operator_id: string | null; type: string; livemode: number }>(
      'SELECT operator_id, type, livemode FROM events ORDER BY seq',
    );
    const sandboxEvents = events.filter((e) => e.operator_id === test.id);
    expect(sandboxEvents.length).toBeGreaterThan(0);
    expect(new Set(sandboxEvents.map((e) => Number(e.livemode)))).toEqual(new Set([0]));
    expect(new Set(sandboxEvents.map((e) => e.type))).toEqual(new Set(['round.opened', 'round.closed', 'bet.settled']));
    expect(events.filter((e) => e.operator_id !== test.id).every((e) => Number(e.livemode) === 1)).toBe(true);
  });
});

describe.each(STORES)('sandbox engines start on demand and stop when idle on %s', (store) => {
  const clock = new FakeClock(Date.now());
  let t: TestApp;
  afterAll(async () => t?.close());

  it('starts on first use, stops after SANDBOX_IDLE_MS unused, resumes its open round on the next use', async () => {
    t = await startTestApp({ store, clock, env: { SANDBOX_IDLE_MS: '5000', CRASH_BETTING_WINDOW_MS: '60000' } });
    const op = await t.createOperator({ mode: 'test' });
    const call = client(t.baseUrl, op);
    const get = (path: string) => call('GET', path, undefined, { timestamp: clock.now() });
    expect(t.app.services.sandbox.runningEngines()).toEqual([]);

    const first = await get('/api/public/v1/rounds/current');
    expect(first.body).toMatchObject({ status: 'open', round_number: 1, livemode: false });
    expect(t.app.services.sandbox.runningEngines().map((e) => [e.operatorId, e.game])).toEqual([[op.id, 'crash']]);

    await clock.advanceAsync(6_000);
    await clock.advanceAsync(6_000);
    expect(t.app.services.sandbox.runningEngines()).toEqual([]);

    const again = await get('/api/public/v1/rounds/current');
    expect(again.body).toMatchObject({ round_id: first.body.round_id, status: 'open' });
    expect(t.app.services.sandbox.runningEngines()).toHaveLength(1);
  });
});
