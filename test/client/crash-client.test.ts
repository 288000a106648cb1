import { BettingApiError, BettingNetworkError, CrashClient } from '@round-betting/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultyProxy } from '../support/faulty-proxy';
import {
  eventually,
  KNOWN_CRASH_SEEDS,
  startTestApp,
  withSeeds,
  type TestApp,
  type TestOperator,
} from '../support/harness';

const betsOf = async (t: TestApp, player: string) =>
  Number((await t.app.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM bets WHERE player = ?', [player]))!.n);

describe('CrashClient against a running service: signing, idempotent retries, typed errors', () => {
  let t: TestApp;
  let op: TestOperator;
  let proxy: FaultyProxy;
  let viaProxy: CrashClient;
  let proxyUrl: string;
  beforeAll(async () => {
    // A long betting window: every bet in this block lands in the one open round.
    t = await startTestApp({ env: { CRASH_BETTING_WINDOW_MS: '600000' } });
    op = await t.createOperator();
    proxy = new FaultyProxy(t.baseUrl);
    proxyUrl = await proxy.start();
    viaProxy = new CrashClient({
      baseUrl: proxyUrl,
      apiKey: op.apiKey,
      apiSecret: op.apiSecret,
      retry: { baseDelayMs: 20, maxDelayMs: 3000 },
    });
    await eventually(
      async () => (await t.app.db.get("SELECT id FROM rounds WHERE game = 'crash' AND status = 'open'")) !== undefined,
    );
  });
  afterAll(async () => {
    await proxy?.close();
    await t?.close();
  });

  it('places a bet and reads it back', async () => {
    const crash = new CrashClient({ baseUrl: t.baseUrl, apiKey: op.apiKey, apiSecret: op.apiSecret });
    const placed = await crash.placeBet({ external_user_id: 'direct', amount: 250, auto_cashout: 2.5 });
    expect(placed).toMatchObject({ external_user_id: 'direct', amount: 250, auto_cashout: 2.5 });
    const round = await crash.currentRound();
    expect(round).toMatchObject({ status: 'open', round_number: placed.round_number });
    expect(await crash.bet(placed.bet_id)).toMatchObject({
      bet_id: placed.bet_id,
      status: 'active',
      amount: 250,
      payout: null,
    });
    expect(await crash.round(placed.round_number)).toMatchObject({ round_id: round.round_id });
  });

  it('retries a lost answer with the same Idempotency-Key: placed once, the retry is a replay', async () => {
    proxy.seen.length = 0;
    proxy.faults = ['lose-answer'];
    const res = await viaProxy.placeBetWithResponse({ external_user_id: 'lost-answer', amount: 100 });
    expect(res.status).toBe(200);
    expect(res.replayed).toBe(true);
    const sent = proxy.seen.filter((s) => s.path === '/api/public/v1/place-bet');
    expect(sent).toHaveLength(2);
    expect(sent[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]!.headers['idempotency-key']).toBe(sent[0]!.headers['idempotency-key']);
    expect(sent[1]!.body).toBe(sent[0]!.body);
    expect(await betsOf(t, 'lost-answer')).toBe(1);
  });

  it('retries after a 503 and honours Retry-After on a 429, never with a new key', async () => {
    proxy.seen.length = 0;
    proxy.faults = [{ status: 503 }, { status: 429, headers: { 'retry-after': '1' } }];
    const placed = await viaProxy.placeBet({ external_user_id: 'after-429', amount: 100 });
    const sent = proxy.seen.filter((s) => s.path === '/api/public/v1/place-bet');
    expect(sent).toHaveLength(3);
    expect(new Set(sent.map((s) => s.headers['idempotency-key'])).size).toBe(1);
    expect(sent[2]!.at - sent[1]!.at).toBeGreaterThanOrEqual(990);
    expect(await viaProxy.bet(placed.bet_id)).toMatchObject({ external_user_id: 'after-429' });
    expect(await betsOf(t, 'after-429')).toBe(1);
  });

  it('gives up with a BettingNetworkError carrying the key; that key then places the bet once', async () => {
    proxy.seen.length = 0;
    proxy.faults = ['cut', 'cut', 'cut', 'cut'];
    const error = await viaProxy.placeBet({ external_user_id: 'unreachable', amount: 100 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BettingNetworkError);
    const key = (error as BettingNetworkError).idempotencyKey!;
    expect((error as BettingNetworkError).attempts).toBe(4);
    expect(proxy.seen.map((s) => s.headers['idempotency-key'])).toEqual([key, key, key, key]);
    expect(await betsOf(t, 'unreachable')).toBe(0);
    const first = await viaProxy.placeBetWithResponse(
      { external_user_id: 'unreachable', amount: 100 },
      { idempotencyKey: key },
    );
    const again = await viaProxy.placeBetWithResponse(
      { external_user_id: 'unreachable', amount: 100 },
      { idempotencyKey: key },
    );
    expect([first.replayed, again.replayed]).toEqual([false, true]);
    expect(again.data.bet_id).toBe(first.data.bet_id);
    expect(await betsOf(t, 'unreachable')).toBe(1);
  });

  it('throws BettingApiError with the code and trace id, and does not retry a 4xx', async () => {
    proxy.seen.length = 0;
    const error = (await viaProxy
      .placeBet({ external_user_id: 'bad', amount: 0 })
      .catch((e: unknown) => e)) as BettingApiError;
    expect(error).toBeInstanceOf(BettingApiError);
    expect(error).toMatchObject({ status: 400, code: 'VALIDATION_FAILED', surface: 'A' });
    expect(error.message).toMatch(/amount/);
    expect(error.traceId).toMatch(/^[0-9a-f-]{36}$/);
    expect(proxy.seen).toHaveLength(1);

    const wrongSecret = new CrashClient({ baseUrl: t.baseUrl, apiKey: op.apiKey, apiSecret: 'sk_not_the_secret' });
    await expect(wrongSecret.currentRound()).rejects.toMatchObject({ status: 401, code: 'INVALID_SIGNATURE' });
    await expect(viaProxy.bet('00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({
      status: 404,
      code: 'BET_NOT_FOUND',
    });
  });

  it("reads a 5xx body's trace_id", async () => {
    proxy.faults = [
      { status: 500, body: JSON.stringify({ error: 'internal error', code: 'INTERNAL', trace_id: 'trace-123' }) },
    ];
    const once = new CrashClient({
      baseUrl: proxyUrl,
      apiKey: op.apiKey,
      apiSecret: op.apiSecret,
      retry: { maxAttempts: 1 },
    });
    await expect(once.currentRound()).rejects.toMatchObject({ status: 500, code: 'INTERNAL', traceId: 'trace-123' });
  });
});

describe('CrashClient: cash-out and a closed window', () => {
  let t: TestApp;
  let crash: CrashClient;
  beforeAll(async () => {
    // One round that crashes at 3.77x, then a long pause.
    t = await startTestApp({
      env: { CRASH_BETTING_WINDOW_MS: '2500', CRASH_PAUSE_MS: '600000', CRASH_TICK_MS: '50' },
      beforeStart: withSeeds('crash', [KNOWN_CRASH_SEEDS.x377]),
    });
    const op = await t.createOperator();
    crash = new CrashClient({ baseUrl: t.baseUrl, apiKey: op.apiKey, apiSecret: op.apiSecret });
  });
  afterAll(async () => t?.close());

  it('cashes out a running bet (read back cashed_out with that payout); a late bet is BETTING_CLOSED', async () => {
    await eventually(async () => (await crash.currentRound().catch(() => null))?.status === 'open');
    const placed = await crash.placeBet({ external_user_id: 'cashes-out', amount: 1000 });
    const running = await eventually(async () => {
      const r = await crash.round(placed.round_number);
      return r.status === 'running' && (r.multiplier ?? 0) >= 1.2 ? r : undefined;
    }, 20_000);
    expect(running.status).toBe('running');
    const cashed = await crash.cashout(placed.bet_id);
    expect(cashed.bet_id).toBe(placed.bet_id);
    expect(cashed.multiplier).toBeGreaterThanOrEqual(1.2);
    expect(cashed.multiplier).toBeLessThan(3.77);
    expect(cashed.payout).toBe(Math.floor((1000 * Math.round(cashed.multiplier * 100)) / 100));
    expect(await crash.bet(placed.bet_id)).toMatchObject({
      status: 'cashed_out',
      payout: cashed.payout,
      multiplier: cashed.multiplier,
    });

    await expect(crash.placeBet({ external_user_id: 'too-late', amount: 100 })).rejects.toMatchObject({
      status: 409,
      code: 'BETTING_CLOSED',
    });
    await expect(crash.cashout(placed.bet_id)).rejects.toMatchObject({ status: 409, code: 'BET_NOT_ACTIVE' });
  });
});
