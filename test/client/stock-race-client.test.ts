import { BettingApiError, StockRaceClient } from '@round-betting/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultyProxy } from '../support/faulty-proxy';
import { eventually, startTestApp, type TestApp, type TestOperator } from '../support/harness';

describe('StockRaceClient against a running service', () => {
  let t: TestApp;
  let op: TestOperator;
  let proxy: FaultyProxy;
  let race: StockRaceClient;
  let viaProxy: StockRaceClient;
  beforeAll(async () => {
    t = await startTestApp({ env: { STOCK_RACE_BETTING_WINDOW_MS: '600000' } });
    op = await t.createOperator();
    race = new StockRaceClient({ baseUrl: t.baseUrl, apiKey: op.apiKey, apiSecret: op.apiSecret });
    proxy = new FaultyProxy(t.baseUrl);
    viaProxy = new StockRaceClient({
      baseUrl: await proxy.start(),
      apiKey: op.apiKey,
      apiSecret: op.apiSecret,
      retry: { baseDelayMs: 20 },
    });
    await eventually(async () => (await race.currentRound().catch(() => null))?.status === 'open');
  });
  afterAll(async () => {
    await proxy?.close();
    await t?.close();
  });

  it('launches a session, reserves with a generated idempotency_key, and reads the bet and the round', async () => {
    const session = await race.launchSession({
      player_ref: 'p1',
      currency: 'EUR',
      return_url: 'https://operator.example/lobby',
    });
    expect(session.launch_url).toContain('token=');
    const round = await race.currentRound();
    expect(round.symbols).toContain('NVDA');
    const reserved = await race.reserveWithResponse({
      session_id: session.session_id,
      round_id: round.round_id,
      selected_stocks: ['NVDA', 'TSLA'],
      stake: 10.5,
    });
    expect(reserved.replayed).toBe(false);
    // 10.50 × 8 × 0.95 / 2 = 39.90
    expect(reserved.data).toMatchObject({
      status: 'reserved',
      stake: 10.5,
      currency: 'EUR',
      potential_payout: 39.9,
      round_id: round.round_id,
    });
    expect(await race.bet(reserved.data.bet_id)).toMatchObject({
      bet_id: reserved.data.bet_id,
      status: 'reserved',
      payout: null,
      settlement: null,
    });
    expect(await race.round(round.round_id)).toMatchObject({ round_id: round.round_id, status: 'open' });
    expect(await race.settlements({ status: 'pending' })).toEqual([]);
  });

  it('retries a reserve whose answer was lost with the same idempotency_key in the body: one bet', async () => {
    const session = await race.launchSession({
      player_ref: 'p2',
      currency: 'EUR',
      return_url: 'https://operator.example/lobby',
    });
    const round = await race.currentRound();
    proxy.seen.length = 0;
    proxy.faults = ['lose-answer', { status: 502 }];
    const res = await viaProxy.reserveWithResponse({
      session_id: session.session_id,
      round_id: round.round_id,
      selected_stocks: ['AAPL'],
      stake: 5,
    });
    expect(res.replayed).toBe(true);
    const keys = proxy.seen.map((s) => JSON.parse(s.body).idempotency_key as string);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    const rows = await t.app.db.all<{ id: string }>('SELECT id FROM bets WHERE player = ?', ['p2']);
    expect(rows.map((r) => r.id)).toEqual([res.data.bet_id]);
  });

  it('retries a launch whose answer was lost under the same Idempotency-Key: one session, the same URL', async () => {
    proxy.seen.length = 0;
    proxy.faults = ['lose-answer'];
    const launched = await viaProxy.launchSession({
      player_ref: 'p-launch',
      currency: 'EUR',
      return_url: 'https://operator.example/lobby',
    });
    const keys = proxy.seen.map((s) => s.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    const rows = await t.app.db.all<{ id: string }>('SELECT id FROM sessions WHERE player_ref = ?', ['p-launch']);
    expect(rows.map((r) => r.id)).toEqual([launched.session_id]);
  });

  it('throws BettingApiError with the Surface B code and message', async () => {
    const round = await race.currentRound();
    const error = (await race
      .reserve({ session_id: 'ses_missing', round_id: round.round_id, selected_stocks: ['AAPL'], stake: 1 })
      .catch((e: unknown) => e)) as BettingApiError;
    expect(error).toBeInstanceOf(BettingApiError);
    expect(error).toMatchObject({
      surface: 'B',
      status: 404,
      code: 'SESSION_NOT_FOUND',
      body: { error: 'SESSION_NOT_FOUND' },
    });
    expect(error.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(error.traceId).toMatch(/^[0-9a-f-]{36}$/);
  });
});
