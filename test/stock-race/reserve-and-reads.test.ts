import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { roundRepository } from '../../src/games/engine/round-repository';
import {
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
const WINDOW = 5_000;
const RACE = 2_000;

describe.each(STORES)('POST /v1/bets/reserve and the Stock Race reads on %s', (store) => {
  let t: TestApp;
  let op: TestOperator;
  let other: TestOperator;
  let call: ReturnType<typeof client>;
  let sessionId: string;
  let roundId: string;
  const clock = new FakeClock(Date.now());

  beforeAll(async () => {
    t = await startTestApp({
      store,
      clock,
      beforeStart: withSeeds('stock_race', [SEED_NVDA]),
      env: {
        STOCK_RACE_BETTING_WINDOW_MS: String(WINDOW),
        STOCK_RACE_DURATION_MS: String(RACE),
        STOCK_RACE_TICK_MS: '500',
        STOCK_RACE_PAUSE_MS: '1000',
      },
    });
    op = await t.createOperator();
    other = await t.createOperator({ name: 'Other' });
    call = client(t.baseUrl, op, 'B');
    const launched = await call(
      'POST',
      '/v1/sessions/launch',
      { player_ref: 'p1', currency: 'EUR', return_url: 'https://op.example/' },
      { timestamp: clock.now() },
    );
    sessionId = launched.body.session_id;
    roundId = (await eventually(async () => roundRepository.latest(t.app.db, 'stock_race')))!.id;
  });
  afterAll(async () => t?.close());

  const get = (path: string) => call('GET', path, undefined, { timestamp: clock.now() });
  const reserve = (body: Record<string, unknown>, as = call) =>
    as('POST', '/v1/bets/reserve', body, { timestamp: clock.now() });
  const base = () => ({
    session_id: sessionId,
    round_id: roundId,
    selected_stocks: ['NVDA', 'TSLA'],
    stake: 10.5,
    idempotency_key: randomUUID(),
  });

  it('shows the open round with its symbols', async () => {
    const res = await get('/v1/rounds/current');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      round_id: roundId,
      game: 'stock_race',
      status: 'open',
      seed: null,
      outcome: null,
      race_ms: RACE,
    });
    expect(res.body.symbols).toEqual(['AAPL', 'AMZN', 'GOOG', 'META', 'MSFT', 'NFLX', 'NVDA', 'TSLA']);
    expect(res.body.betting_closes_at - res.body.opened_at).toBe(WINDOW);
  });

  it('reserves a bet and answers with what the operator needs', async () => {
    const body = base();
    const res = await reserve(body);
    expect(res.status).toBe(200);
    // 10.50 × 8 × 0.95 / 2 = 39.90
    expect(res.body).toEqual({
      bet_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      round_id: roundId,
      round_number: 1,
      session_id: sessionId,
      player_ref: 'p1',
      status: 'reserved',
      stake: 10.5,
      currency: 'EUR',
      selected_stocks: ['NVDA', 'TSLA'],
      potential_payout: 39.9,
      placed_at: clock.now(),
    });
    const bet = await get(`/v1/bets/${res.body.bet_id}`);
    expect(bet.body).toMatchObject({ status: 'reserved', stake: 10.5, payout: null, settlement: null });
  });

  it('replays the same key and body (any key order) with idempotent-replay, refuses a new body under it', async () => {
    const body = base();
    const first = await reserve(body);
    const { idempotency_key, stake, ...rest } = body;
    const reordered = await reserve({ stake, idempotency_key, ...rest });
    expect(reordered.status).toBe(200);
    expect(reordered.headers['idempotent-replay']).toBe('true');
    expect(reordered.body).toEqual(first.body);
    const changed = await reserve({ ...body, stake: 11 });
    expect(changed.status).toBe(409);
    expect(changed.body).toEqual({
      error: 'IDEMPOTENCY_KEY_REUSED',
      message: 'idempotency key reused with different body',
    });
    const count = await t.app.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM bets WHERE id = ?', [first.body.bet_id]);
    expect(Number(count!.n)).toBe(1);
  });

  it('requires idempotency_key: 400 IDEMPOTENCY_KEY_MISSING', async () => {
    const { idempotency_key: _omit, ...body } = base();
    const res = await reserve(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'IDEMPOTENCY_KEY_MISSING',
      message: 'field "idempotency_key" is required: reserve is a monetary write',
    });
  });

  it.each([
    ['no stocks', [], /empty/],
    ['a stock twice', ['AAPL', 'AAPL'], /AAPL more than once/],
    ['an unknown symbol', ['AAPL', 'ZZZZ'], /unknown stock symbol\(s\) ZZZZ/],
    ['every stock', ['AAPL', 'AMZN', 'GOOG', 'META', 'MSFT', 'NFLX', 'NVDA', 'TSLA'], /all 8 stocks/],
  ])('refuses a selection of %s: 400 INVALID_SELECTION', async (_what, selected, message) => {
    const res = await reserve({ ...base(), selected_stocks: selected });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('INVALID_SELECTION');
    expect(res.body.message).toMatch(message);
  });

  it.each([
    [0, 'STAKE_OUT_OF_RANGE'],
    [-5, 'STAKE_OUT_OF_RANGE'],
    [0.99, 'STAKE_OUT_OF_RANGE'],
    [1000.01, 'STAKE_OUT_OF_RANGE'],
    [1e21, 'STAKE_OUT_OF_RANGE'],
    [1.005, 'STAKE_PRECISION'],
  ])('refuses a stake of %s EUR: 400 %s', async (stake, code) => {
    const res = await reserve({ ...base(), stake });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe(code);
  });

  it('accepts the default bounds 1.00 and 1000.00 EUR, and follows the operator limits for the currency', async () => {
    expect((await reserve({ ...base(), stake: 1 })).status).toBe(200);
    expect((await reserve({ ...base(), stake: 1000 })).status).toBe(200);
    await t.app.services.operators.updateSettings(op.id, { stake_limits: { EUR: { min: 50, max: 200 } } });
    expect((await reserve({ ...base(), stake: 0.5 })).status).toBe(200);
    expect((await reserve({ ...base(), stake: 0.49 })).body.error).toBe('STAKE_OUT_OF_RANGE');
    expect((await reserve({ ...base(), stake: 2.01 })).body.error).toBe('STAKE_OUT_OF_RANGE');
    await t.app.services.operators.updateSettings(op.id, { stake_limits: {} });
  });

  it('refuses a session whose currency the operator has since withdrawn: 400 CURRENCY_NOT_ALLOWED', async () => {
    await t.app.services.operators.updateSettings(op.id, { currencies: ['USD'] });
    const res = await reserve(base());
    await t.app.services.operators.updateSettings(op.id, { currencies: ['EUR', 'USD', 'GBP'] });
    expect([res.status, res.body.error]).toEqual([400, 'CURRENCY_NOT_ALLOWED']);
  });

  it('refuses a stake given as a string: 400 VALIDATION_FAILED naming the field', async () => {
    const res = await reserve({ ...base(), stake: '10' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'VALIDATION_FAILED',
      message: 'field "stake" must be a decimal amount in the session currency',
    });
  });

  it("refuses an unknown session, another operator's session, and an expired one", async () => {
    expect((await reserve({ ...base(), session_id: 'ses_nope' })).body.error).toBe('SESSION_NOT_FOUND');
    const theirs = client(t.baseUrl, other, 'B');
    const r404 = await reserve(base(), theirs);
    expect([r404.status, r404.body.error]).toEqual([404, 'SESSION_NOT_FOUND']);
    const launched = await call(
      'POST',
      '/v1/sessions/launch',
      { player_ref: 'p2', currency: 'EUR', return_url: 'https://op.example/' },
      { timestamp: clock.now() },
    );
    await t.app.db.run('UPDATE sessions SET expires_at = ? WHERE id = ?', [clock.now(), launched.body.session_id]);
    const expired = await reserve({ ...base(), session_id: launched.body.session_id });
    expect([expired.status, expired.body.error]).toEqual([409, 'SESSION_EXPIRED']);
  });

  it('refuses an unknown round (404 ROUND_NOT_FOUND) and a Crash round (409 WRONG_GAME)', async () => {
    const unknown = await reserve({ ...base(), round_id: 'rnd_nope' });
    expect([unknown.status, unknown.body.error]).toEqual([404, 'ROUND_NOT_FOUND']);
    const crash = await eventually(async () => roundRepository.latest(t.app.db, 'crash'));
    const wrong = await reserve({ ...base(), round_id: crash.id });
    expect([wrong.status, wrong.body.error]).toEqual([409, 'WRONG_GAME']);
    expect((await get(`/v1/rounds/${crash.id}`)).body.error).toBe('ROUND_NOT_FOUND');
  });

  it("reads: unknown bet, another operator's bet, bad settlement filter", async () => {
    expect((await get(`/v1/bets/${randomUUID()}`)).body.error).toBe('BET_NOT_FOUND');
    const mine = await reserve(base());
    const theirs = await client(t.baseUrl, other, 'B')('GET', `/v1/bets/${mine.body.bet_id}`, undefined, {
      timestamp: clock.now(),
    });
    expect([theirs.status, theirs.body.error]).toEqual([404, 'BET_NOT_FOUND']);
    const lost = await get('/v1/settlements?status=lost');
    expect([lost.status, lost.body.error]).toEqual([400, 'VALIDATION_FAILED']);
    // The union's own words, not "must be equal to constant" from its first literal.
    expect(lost.body.message).toBe('querystring field "status" must be pending or delivered');
    expect((await get('/v1/settlements?status=pending')).body).toEqual({ settlements: [], has_more: false });
  });

  it('streams the live feed over SSE, starting with the round', async () => {
    const ts = String(clock.now());
    const { signRequest } = await import('../../src/signing/request-signature');
    const controller = new AbortController();
    const res = await request(`${t.baseUrl}/v1/rounds/stream`, {
      headers: {
        'x-operator-key': op.apiKey,
        'x-timestamp': ts,
        'x-signature': signRequest(op.apiSecret, 'GET', '/v1/rounds/stream', ts, ''),
      },
      signal: controller.signal,
    });
    expect(res.statusCode).toBe(200);
    let text = '';
    for await (const chunk of res.body) {
      text += chunk.toString();
      if (text.includes('event: round')) break;
    }
    controller.abort();
    const data = JSON.parse(/event: round\ndata: (.*)\n/.exec(text)![1]!);
    expect(data).toMatchObject({ round_id: roundId, game: 'stock_race', status: 'open' });
  });

  // Last: moves the round on.
  it('closes betting at betting_closes_at (409 BETTING_CLOSED), races, then settles bets from the seed', async () => {
    const kept = await reserve({ ...base(), selected_stocks: ['NVDA', 'TSLA'], stake: 2 });
    const lost = await reserve({ ...base(), selected_stocks: ['AAPL'], stake: 3 });
    // Quoted 100 × 8 × 95% = 760.00 under the default settings, then the operator halves its RTP and
    // lowers its cap during the window: the close pays what the answer quoted (migration 013).
    const quoted = await reserve({ ...base(), selected_stocks: ['NVDA'], stake: 100 });
    expect(quoted.body.potential_payout).toBe(760);
    await t.app.services.operators.updateSettings(op.id, { stock_race: { rtp_bp: 4750, max_payout_major: 300 } });
    const after = await reserve({ ...base(), selected_stocks: ['NVDA'], stake: 100 });
    expect(after.body.potential_payout).toBe(300);
    // A yen operator with caps of its own in minor units (yen): the default 100 000 major units would
    // cap these bets at 100 000 yen. Quoted 7 600 000 capped to 5 000 000, and 3 800 000; their total
    // passes the round cap of 6 000 000, so each gets floor(quote × 6 000 000 / 8 800 000).
    const yen = await t.createOperator({
      name: 'Yen',
      settings: {
        currencies: ['JPY'],
        stake_limits: { JPY: { min: 100, max: 10_000_000 } },
        payout_limits: { JPY: { max_payout: 5_000_000, max_payout_per_round: 6_000_000 } },
      },
    });
    const yenCall = client(t.baseUrl, yen, 'B');
    const yenLaunch = { player_ref: 'y1', currency: 'JPY', return_url: 'https://op.example/' };
    const yenSession = (await yenCall('POST', '/v1/sessions/launch', yenLaunch, { timestamp: clock.now() })).body;
    const yenBet = (stake: number) =>
      reserve({ ...base(), session_id: yenSession.session_id, selected_stocks: ['NVDA'], stake }, yenCall);
    const bigYen = await yenBet(1_000_000);
    const smallYen = await yenBet(500_000);
    expect([bigYen.status, bigYen.body.potential_payout]).toEqual([200, 5_000_000]);
    expect([smallYen.status, smallYen.body.potential_payout]).toEqual([200, 3_800_000]);
    await clock.advanceAsync(WINDOW);
    const closed = await reserve(base());
    expect([closed.status, closed.body.error]).toEqual([409, 'BETTING_CLOSED']);
    await eventually(async () => (await get('/v1/rounds/current')).body.status === 'running');
    await clock.advanceAsync(RACE / 2, () => new Promise((r) => setTimeout(r, 20)));
    const mid = (await get('/v1/rounds/current')).body;
    expect(mid.progress_permille).toBe(500);
    expect(mid.stocks).toHaveLength(8);
    await clock.advanceAsync(RACE / 2, () => new Promise((r) => setTimeout(r, 20)));
    const round = await eventually(async () => {
      const r = await get(`/v1/rounds/${roundId}`);
      return r.body.status === 'closed' ? r.body : undefined;
    });
    expect(round.seed).toBe(SEED_NVDA);
    expect(round.outcome).toMatchObject({ winner: 'NVDA', pct: 8.85 });
    expect((await get(`/v1/bets/${kept.body.bet_id}`)).body).toMatchObject({ status: 'won', payout: 7.6 });
    expect((await get(`/v1/bets/${lost.body.bet_id}`)).body).toMatchObject({ status: 'lost', payout: 0 });
    expect((await get(`/v1/bets/${quoted.body.bet_id}`)).body).toMatchObject({ status: 'won', payout: 760 });
    expect((await get(`/v1/bets/${after.body.bet_id}`)).body).toMatchObject({ status: 'won', payout: 300 });
    const yenGet = (id: string) => yenCall('GET', `/v1/bets/${id}`, undefined, { timestamp: clock.now() });
    expect((await yenGet(bigYen.body.bet_id)).body).toMatchObject({ status: 'won', payout: 3_409_090 });
    expect((await yenGet(smallYen.body.bet_id)).body).toMatchObject({ status: 'won', payout: 2_590_909 });
    // This operator has no wallet_url: bet.settled events only, no settle calls.
    expect((await get('/v1/settlements')).body).toEqual({ settlements: [], has_more: false });
  });
});
