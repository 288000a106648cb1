import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOperatorWallet, type OperatorWallet } from '../../examples/operator-wallet/server';
import {
  client,
  eventually,
  KNOWN_CRASH_SEEDS,
  startTestApp,
  STORES,
  withSeeds,
  type TestApp,
  type TestOperator,
} from '../support/harness';
import { parsePrometheusText, type Exposition } from '../support/prometheus-text';
import { TestReceiver } from '../support/webhook-receiver';

const P = 'rbs_';

async function scrape(
  baseUrl: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string; text: string }> {
  const res = await request(`${baseUrl}/metrics`, { headers });
  return { status: res.statusCode, type: String(res.headers['content-type']), text: await res.body.text() };
}

async function metrics(t: TestApp): Promise<Exposition> {
  const r = await scrape(t.baseUrl);
  expect(r.status).toBe(200);
  expect(r.type).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(r.text);
}

async function post(url: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, body: await res.body.json() };
}

describe.each(STORES)('GET /metrics counts what the store committed, on %s', (store) => {
  let t: TestApp;
  let op: TestOperator;
  let wallet: OperatorWallet;
  const receiver = new TestReceiver();
  let hooks = '';

  beforeAll(async () => {
    hooks = await receiver.start();
    receiver.behaviour = (r) => (r.path === '/down' ? { status: 503 } : { status: 200 });
    t = await startTestApp({
      store,
      env: {
        CRASH_BETTING_WINDOW_MS: '1500',
        CRASH_PAUSE_MS: '60000',
        CRASH_TICK_MS: '50',
        STOCK_RACE_BETTING_WINDOW_MS: '1500',
        STOCK_RACE_DURATION_MS: '300',
        STOCK_RACE_PAUSE_MS: '200',
        STOCK_RACE_TICK_MS: '100',
        WALLET_RETRY_SCHEDULE_MS: '0,100,200',
        WEBHOOK_RETRY_SCHEDULE_MS: '0,50,50',
        OUTBOX_POLL_MS: '50',
      },
      // Round 1 crashes at 1.26x (a published bustabit result), so every payout is known.
      beforeStart: withSeeds('crash', [KNOWN_CRASH_SEEDS.x126]),
    });
    op = await t.createOperator();
    const dataFile = join(mkdtempSync(join(tmpdir(), 'wallet-')), 'ledger.json');
    wallet = await startOperatorWallet({ serviceUrl: t.baseUrl, apiKey: op.apiKey, apiSecret: op.apiSecret, dataFile });
    await t.app.services.operators.setWalletUrl(op.id, wallet.url);
    const ep = await client(t.baseUrl, op)('POST', '/api/public/v1/webhook-endpoints', {
      url: `${hooks}/settled`,
      events: ['bet.settled'],
    });
    expect(ep.status).toBe(201);
  });
  afterAll(async () => {
    await wallet?.close();
    await t?.close();
    await receiver.close();
  });

  it('is valid Prometheus text with the Node defaults, zeroed counters and this process as engine leader', async () => {
    const m = await metrics(t);
    expect(m.types.get(`${P}process_cpu_seconds_total`)).toBe('counter');
    expect(m.types.get(`${P}nodejs_heap_size_used_bytes`)).toBe('gauge');
    expect(m.types.get(`${P}http_request_duration_seconds`)).toBe('histogram');
    expect(m.value(`${P}bets_placed_total`, { game: 'crash' })).toBe(0);
    expect(m.value(`${P}round_engine_leader`, { game: 'crash' })).toBe(1);
    expect(m.value(`${P}round_engine_leader`, { game: 'stock_race' })).toBe(1);
    expect(m.value(`${P}outbox_pending`, { queue: 'wallet' })).toBe(0);
    expect(m.value(`${P}outbox_oldest_age_seconds`, { queue: 'webhooks' })).toBe(0);
  });

  it('counts Crash bets placed once (not on replay) and settled by outcome, with the payout in units', async () => {
    const call = client(t.baseUrl, op);
    await eventually(async () => (await call('GET', '/api/public/v1/rounds/current')).body?.status === 'open');
    const winner = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'alice', amount: 1_000, auto_cashout: 1.1 },
      { idempotencyKey: 'm-1' },
    );
    expect(winner.status).toBe(200);
    const replay = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'alice', amount: 1_000, auto_cashout: 1.1 },
      { idempotencyKey: 'm-1' },
    );
    expect(replay.headers['idempotent-replay']).toBe('true');
    const loser = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'bob', amount: 500, auto_cashout: 1.3 },
      { idempotencyKey: 'm-2' },
    );
    expect(loser.status).toBe(200);

    let m = await metrics(t);
    expect(m.value(`${P}bets_placed_total`, { game: 'crash' })).toBe(2);
    expect(m.value(`${P}bets_settled_total`, { game: 'crash', outcome: 'lost' })).toBeUndefined();

    await eventually(async () => (await call('GET', '/api/public/v1/rounds/1')).body?.status === 'closed', 15_000);
    m = await metrics(t);
    expect(m.value(`${P}bets_placed_total`, { game: 'crash' })).toBe(2);
    expect(m.value(`${P}bets_settled_total`, { game: 'crash', outcome: 'cashed_out' })).toBe(1);
    expect(m.value(`${P}bets_settled_total`, { game: 'crash', outcome: 'lost' })).toBe(1);
    // 1 000 × 1.10 = 1 100; the loser pays nothing. Surface A amounts have no currency.
    expect(m.value(`${P}payouts_minor_total`, { game: 'crash', currency: 'none' })).toBe(1_100);

    // The route pattern, never the raw URL: bet ids do not become series.
    await call('GET', `/api/public/v1/bets/${winner.body.bet_id}`);
    await request(`${t.baseUrl}/no/such/${winner.body.bet_id}`);
    m = await metrics(t);
    const routes = new Set(
      m.samples.filter((s) => s.name === `${P}http_request_duration_seconds_count`).map((s) => s.labels.route),
    );
    expect(routes).toContain('/api/public/v1/place-bet');
    expect(routes).toContain('/api/public/v1/bets/:bet_id');
    expect(routes).toContain('unmatched');
    expect([...routes].some((r) => r!.includes(winner.body.bet_id))).toBe(false);
    expect(
      m.value(`${P}http_request_duration_seconds_count`, {
        method: 'POST',
        route: '/api/public/v1/place-bet',
        status_code: '200',
      }),
    ).toBe(3);
  });

  it("leaves a sandbox operator's bets out of the live figures", async () => {
    const sandbox = client(t.baseUrl, await t.createOperator({ mode: 'test' }));
    const before = (await metrics(t)).value(`${P}bets_placed_total`, { game: 'crash' });
    let n = 0;
    const placed = await eventually(async () => {
      const body = { external_user_id: 'tester', amount: 100 };
      const r = await sandbox('POST', '/api/public/v1/place-bet', body, { idempotencyKey: `sandbox-${++n}` });
      return r.status === 200 ? r : undefined;
    }, 20_000);
    expect(placed.body.livemode).toBe(false);
    expect((await metrics(t)).value(`${P}bets_placed_total`, { game: 'crash' })).toBe(before);
  });

  it('counts Stock Race bets, settlements in minor units and the wallet settle calls', async () => {
    expect((await post(`${wallet.url}/players/carol/deposit`, { currency: 'EUR', amount: 100 })).status).toBe(200);
    const session = await post(`${wallet.url}/players/carol/sessions`, {
      return_url: 'https://operator.example/lobby',
    });
    const callB = client(t.baseUrl, op, 'B');
    // Two thirds of the window to spare: an attempt retried after one bet was placed and the other
    // refused would leave a third bet in the counters.
    const roundId = await eventually(async () => {
      const current = await callB('GET', '/v1/rounds/current');
      if (current.body?.status !== 'open' || current.body.betting_closes_at - Date.now() < 1000) return undefined;
      const placed = await Promise.all(
        [
          ['AAPL', 'AMZN', 'GOOG', 'META'],
          ['MSFT', 'NFLX', 'NVDA', 'TSLA'],
        ].map((selected) =>
          post(`${wallet.url}/players/carol/bets`, {
            session_id: session.body.session_id,
            round_id: current.body.round_id,
            selected_stocks: selected,
            stake: 10,
          }),
        ),
      );
      expect(placed.map((p) => p.status)).toEqual([200, 200]);
      return current.body.round_id as string;
    }, 15_000);
    expect((await metrics(t)).value(`${P}bets_placed_total`, { game: 'stock_race' })).toBe(2);

    await eventually(async () => wallet.settleLog().filter((e) => e.result === 'credited').length === 2, 15_000);
    expect((await callB('GET', `/v1/rounds/${roundId}`)).body.status).toBe('closed');
    const m = await metrics(t);
    expect(m.value(`${P}bets_settled_total`, { game: 'stock_race', outcome: 'won' })).toBe(1);
    expect(m.value(`${P}bets_settled_total`, { game: 'stock_race', outcome: 'lost' })).toBe(1);
    // One of two 4-of-8 bets wins: 10.00 EUR × 8 × 0.95 / 4 = 19.00 EUR = 1 900 cents.
    expect(m.value(`${P}payouts_minor_total`, { game: 'stock_race', currency: 'EUR' })).toBe(1_900);
    // The wallet logs a credit before the service has recorded the 2xx it answered: wait for that.
    const recorded = await eventually(async () => {
      const now = await metrics(t);
      return now.value(`${P}wallet_settlements_total`, { outcome: 'delivered' }) === 2 ? now : undefined;
    }, 10_000);
    expect(recorded.value(`${P}outbox_pending`, { queue: 'wallet' })).toBe(0);
    expect(recorded.value(`${P}wallet_settlements_total`, { outcome: 'failed' })).toBeUndefined();
  });

  it('counts webhook deliveries: four bet.settled events delivered, a failing endpoint retried then dead', async () => {
    const call = client(t.baseUrl, op);
    const down = await call('POST', '/api/public/v1/webhook-endpoints', {
      url: `${hooks}/down`,
      events: ['bet.settled'],
    });
    expect((await call('POST', `/api/public/v1/webhook-endpoints/${down.body.endpoint_id}/test`)).status).toBe(202);
    const m = await eventually(async () => {
      const now = await metrics(t);
      return now.value(`${P}webhook_deliveries_total`, { outcome: 'dead' }) === 1 &&
        receiver.on('/settled').length === 4
        ? now
        : undefined;
    }, 15_000);
    // Three attempts (WEBHOOK_RETRY_SCHEDULE_MS has three entries): two retries, then the dead letter.
    expect(receiver.on('/down')).toHaveLength(3);
    expect(m.value(`${P}webhook_deliveries_total`, { outcome: 'retry' })).toBe(2);
    await eventually(
      async () => (await metrics(t)).value(`${P}webhook_deliveries_total`, { outcome: 'delivered' }) === 4,
      10_000,
    );
  });
});

describe('GET /metrics access', () => {
  let t: TestApp;
  const TOKEN = 'scrape-token-0123456789';

  beforeAll(async () => {
    t = await startTestApp({
      engines: false,
      env: { METRICS_TOKEN: TOKEN, RATE_LIMIT_BURST: '2', RATE_LIMIT_PER_SECOND: '1' },
    });
  });
  afterAll(async () => t?.close());

  it('requires the bearer token when METRICS_TOKEN is set', async () => {
    const none = await scrape(t.baseUrl);
    expect(none.status).toBe(401);
    expect(JSON.parse(none.text)).toMatchObject({ error: 'UNAUTHORIZED' });
    expect(none.text).not.toContain(`${P}bets_placed_total`);
    expect((await scrape(t.baseUrl, { authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    expect((await scrape(t.baseUrl, { authorization: TOKEN })).status).toBe(401);
    const ok = await scrape(t.baseUrl, { authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(parsePrometheusText(ok.text).value(`${P}bets_placed_total`, { game: 'stock_race' })).toBe(0);
  });

  it('counts 429 refusals by surface', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await call('GET', '/api/public/v1/rounds/current')).status);
    const refused = statuses.filter((s) => s === 429).length;
    expect(refused).toBeGreaterThanOrEqual(1);
    const m = parsePrometheusText((await scrape(t.baseUrl, { authorization: `Bearer ${TOKEN}` })).text);
    expect(m.value(`${P}rate_limited_total`, { surface: 'a' })).toBe(refused);
  });
});
