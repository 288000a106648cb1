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
} from '../support/harness';
import { browser, csrfOf } from '../support/dashboard-browser';
import { TestReceiver } from '../support/webhook-receiver';

const ENV = {
  WEBHOOK_RETRY_SCHEDULE_MS: '0,50,100,150,200',
  WEBHOOK_TIMEOUT_MS: '2000',
  OUTBOX_POLL_MS: '20',
  CRASH_BETTING_WINDOW_MS: '400',
  CRASH_PAUSE_MS: '100',
  // Stock Race stays in its first betting window: only Crash rounds come and go here.
  STOCK_RACE_BETTING_WINDOW_MS: '600000',
};
const PASSWORD = 'long enough password';

describe.each(STORES)('a disabled operator on %s', (store) => {
  let t: TestApp;
  const receiver = new TestReceiver();
  let base = '';

  beforeAll(async () => {
    base = await receiver.start();
    // Short rounds (1.18x and 1.26x) so the test sees several open and close.
    const seeds = Array.from({ length: 60 }, (_, i) => (i % 2 ? KNOWN_CRASH_SEEDS.x126 : KNOWN_CRASH_SEEDS.x118));
    t = await startTestApp({ store, env: ENV, beforeStart: withSeeds('crash', seeds) });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  it('loses its dashboard at once (pages, secret rotation, new endpoints), gets it back when enabled', async () => {
    const op = await t.createOperator();
    const email = `d-${store}@example.com`;
    const auth = t.app.services.dashboardUsers;
    await auth.createUser({ operatorId: op.id, email, password: PASSWORD });
    const b = browser(t.baseUrl);
    const form = await b.go('GET', '/dashboard/login');
    const signIn = { _csrf: csrfOf(form.text), email, password: PASSWORD };
    expect((await b.go('POST', '/dashboard/login', signIn)).status).toBe(303);
    const page = await b.go('GET', '/dashboard/credentials');
    expect(page.status).toBe(200);
    const csrf = csrfOf(page.text);

    await t.app.services.operators.setStatus(op.id, 'disabled');

    const refused = await b.go('GET', '/dashboard/credentials');
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('This operator account is disabled');
    expect(refused.text).not.toContain(op.apiKey);
    expect((await b.go('GET', '/dashboard/api/stats')).status).toBe(403);
    expect((await b.go('POST', '/dashboard/credentials/rotate', { _csrf: csrf, confirm: '1' })).status).toBe(403);
    const newEndpoint = { _csrf: csrf, url: `${base}/from-dashboard`, events: 'bet.settled' };
    const added = await b.go('POST', '/dashboard/webhooks', newEndpoint);
    expect(added.status).toBe(403);
    expect(await t.app.services.webhooks.listEndpoints(op.id)).toEqual([]);
    // The API refuses it too (as before).
    expect((await client(t.baseUrl, op)('GET', '/api/public/v1/rounds/current')).status).toBe(403);

    await t.app.services.operators.setStatus(op.id, 'active');

    // The same session works again, and the secret was never rotated: the old one still signs.
    expect((await b.go('GET', '/dashboard/credentials')).status).toBe(200);
    expect((await client(t.baseUrl, op)('GET', '/api/public/v1/rounds/current')).status).toBe(200);
    const row = await t.app.db.get<{ previous_secret_enc: string | null }>(
      'SELECT previous_secret_enc FROM operators WHERE id = ?',
      [op.id],
    );
    expect(row?.previous_secret_enc).toBeNull();
  });

  it('gets no webhook while disabled: no round events queued, its bet.settled held and sent once enabled', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const path = `/disabled-${store}`;
    const events = ['round.opened', 'bet.settled'];
    const created = await call('POST', '/api/public/v1/webhook-endpoints', { url: `${base}${path}`, events });
    expect(created.status).toBe(201);
    const endpointId = created.body.endpoint_id as string;

    const placed = await eventually(async () => {
      const bet = { external_user_id: 'p1', amount: 100, auto_cashout: 1.01 };
      const r = await call('POST', '/api/public/v1/place-bet', bet, { idempotencyKey: `k-${Math.random()}` });
      return r.status === 200 ? r : undefined;
    }, 20_000);
    const betId = placed.body.bet_id as string;
    await t.app.services.operators.setStatus(op.id, 'disabled');
    const disabledAt = Date.now();
    const db = t.app.db;

    // The bet (placed before the disable) settles, and two more rounds open, while disabled.
    const roundsBefore = (await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM rounds WHERE game = 'crash'`))!.n;
    await eventually(async () => {
      const bet = await db.get<{ status: string }>('SELECT status FROM bets WHERE id = ?', [betId]);
      const rounds = (await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM rounds WHERE game = 'crash'`))!.n;
      return bet?.status !== 'active' && Number(rounds) >= Number(roundsBefore) + 2;
    }, 20_000);
    // Give the dispatcher (polling every 20 ms) ample time to send anything it would send.
    await new Promise((r) => setTimeout(r, 500));

    const typeOf = (r: { body: string }): string => JSON.parse(r.body).type;
    const settledWhileDisabled = receiver.on(path).filter((r) => typeOf(r) === 'bet.settled');
    expect(settledWhileDisabled).toEqual([]);
    // A delivery claimed just before the disable may still land; nothing queued after it may.
    const openedLater = receiver.on(path).filter((r) => r.at > disabledAt + 200 && typeOf(r) === 'round.opened');
    expect(openedLater).toEqual([]);
    const queuedLater = await db.all(
      `SELECT d.id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
       WHERE d.endpoint_id = ? AND e.type = 'round.opened' AND e.created_at > ?`,
      [endpointId, disabledAt + 200],
    );
    expect(queuedLater).toEqual([]);
    const held = await db.all<{ status: string; attempts: number }>(
      `SELECT d.status, d.attempts FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
       WHERE d.endpoint_id = ? AND e.type = 'bet.settled'`,
      [endpointId],
    );
    const states = held.map((h) => ({ status: h.status, attempts: Number(h.attempts) }));
    expect(states).toEqual([{ status: 'pending', attempts: 0 }]);

    await t.app.services.operators.setStatus(op.id, 'active');
    const enabledAt = Date.now();
    const settled = await eventually(
      async () =>
        receiver.on(path).find((r) => typeOf(r) === 'bet.settled' && JSON.parse(r.body).data.bet_id === betId),
      15_000,
    );
    expect(settled.at).toBeGreaterThanOrEqual(enabledAt);
    const openedSince = (at: number) => receiver.on(path).some((r) => r.at > at && typeOf(r) === 'round.opened');
    await eventually(async () => openedSince(enabledAt), 15_000);
  });
});

describe.each(STORES)('wallet settlements of a disabled operator on %s', (store) => {
  const WALLET_ENV = {
    STOCK_RACE_BETTING_WINDOW_MS: '800',
    STOCK_RACE_DURATION_MS: '300',
    STOCK_RACE_PAUSE_MS: '100',
    STOCK_RACE_TICK_MS: '100',
    WALLET_RETRY_SCHEDULE_MS: '0,100,200',
    WALLET_TIMEOUT_MS: '1000',
    OUTBOX_POLL_MS: '50',
    CRASH_BETTING_WINDOW_MS: '600000',
  };
  let t: TestApp;
  let wallet: OperatorWallet;
  afterAll(async () => {
    await wallet?.close();
    await t?.close();
  });

  it('are still paid: a bet reserved before the disable is settled to the player, to the minor unit', async () => {
    t = await startTestApp({ store, env: WALLET_ENV });
    const op = await t.createOperator({ name: 'Wallet operator' });
    wallet = await startOperatorWallet({
      serviceUrl: t.baseUrl,
      apiKey: op.apiKey,
      apiSecret: op.apiSecret,
      dataFile: join(mkdtempSync(join(tmpdir(), 'wallet-')), 'ledger.json'),
    });
    await t.app.services.operators.setWalletUrl(op.id, wallet.url);
    const post = async (url: string, body: unknown) => {
      const headers = { 'content-type': 'application/json' };
      const res = await request(url, { method: 'POST', headers, body: JSON.stringify(body) });
      return { status: res.statusCode, body: (await res.body.json()) as any };
    };
    expect((await post(`${wallet.url}/players/alice/deposit`, { currency: 'EUR', amount: 100 })).status).toBe(200);
    const lobby = { return_url: 'https://operator.example/lobby' };
    const session = await post(`${wallet.url}/players/alice/sessions`, lobby);
    // Two bets on complementary halves of the field: exactly one wins 10.00 × 8 × 0.95 / 4 = 19.00.
    await eventually(async () => {
      const current = await client(t.baseUrl, op, 'B')('GET', '/v1/rounds/current');
      const open = current.status === 200 && current.body.status === 'open';
      if (!open || current.body.betting_closes_at - Date.now() < 400) return undefined;
      const placed = await Promise.all(
        [
          ['AAPL', 'AMZN', 'GOOG', 'META'],
          ['MSFT', 'NFLX', 'NVDA', 'TSLA'],
        ].map((selected) =>
          post(`${wallet.url}/players/alice/bets`, {
            session_id: session.body.session_id,
            round_id: current.body.round_id,
            selected_stocks: selected,
            stake: 10,
          }),
        ),
      );
      expect(placed.map((p) => p.status)).toEqual([200, 200]);
      return true;
    }, 15_000);
    await t.app.services.operators.setStatus(op.id, 'disabled');

    await eventually(async () => wallet.settleLog().filter((e) => e.result === 'credited').length === 2, 15_000);
    expect(wallet.store.player('alice')).toEqual({ currency: 'EUR', balance: 10_000 - 2000 + 1900, reserved: 0 });
    expect((await t.app.services.operators.get(op.id)).status).toBe('disabled');
  });
});
