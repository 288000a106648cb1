import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { startOperatorWallet, type OperatorWallet } from '../../examples/operator-wallet/server';
import { ChildService, freePort } from '../support/child-service';
import { client, eventually, type TestOperator } from '../support/harness';

async function post(url: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, body: await res.body.json() };
}

/**
 * The service as a real child process (the production entry point), so it can be killed with
 * SIGKILL: no shutdown hook runs, whatever was in memory is gone, only the store survives.
 */
describe('service killed with SIGKILL between round close and the wallet acknowledging the settle', () => {
  const svc = new ChildService({
    STOCK_RACE_BETTING_WINDOW_MS: '1500',
    STOCK_RACE_DURATION_MS: '300',
    STOCK_RACE_PAUSE_MS: '100',
    CRASH_BETTING_WINDOW_MS: '60000',
    WALLET_RETRY_SCHEDULE_MS: '0,100,200',
    WALLET_TIMEOUT_MS: '1000',
    OUTBOX_POLL_MS: '50',
  });
  let wallet: OperatorWallet | null = null;

  afterAll(async () => {
    await svc.kill9();
    await wallet?.close();
  });

  it('delivers the settle exactly once after a restart on the same store', async () => {
    const walletPort = await freePort();
    const created = await svc.admin(
      'operator',
      'create',
      '--name',
      'Kill test operator',
      '--wallet-url',
      `http://127.0.0.1:${walletPort}`,
    );
    const op: TestOperator = { id: created.operator_id, apiKey: created.api_key, apiSecret: created.api_secret };
    await svc.start();
    wallet = await startOperatorWallet({
      port: walletPort,
      serviceUrl: svc.baseUrl,
      apiKey: op.apiKey,
      apiSecret: op.apiSecret,
    });

    const call = client(svc.baseUrl, op, 'B');
    // Both bets in one round, placed with time to spare so neither should meet the window's end. An
    // attempt that still does (one bet placed, one refused) leaves its player to that round: the next
    // attempt bets for a fresh one, so the balance checked below holds only these two bets.
    let attempt = 0;
    const { zoe, betIds } = await eventually(async () => {
      const current = await call('GET', '/v1/rounds/current');
      if (current.status !== 200 || current.body.status !== 'open' || current.body.betting_closes_at - Date.now() < 800)
        return undefined;
      const ref = attempt === 0 ? 'zoe' : `zoe-${attempt + 1}`;
      attempt++;
      expect((await post(`${wallet!.url}/players/${ref}/deposit`, { currency: 'EUR', amount: 30 })).status).toBe(200);
      const session = await post(`${wallet!.url}/players/${ref}/sessions`, {});
      expect(session.status).toBe(200);
      const placed = await Promise.all(
        [
          ['AAPL', 'AMZN', 'GOOG', 'META'],
          ['MSFT', 'NFLX', 'NVDA', 'TSLA'],
        ].map((selected) =>
          post(`${wallet!.url}/players/${ref}/bets`, {
            session_id: session.body.session_id,
            round_id: current.body.round_id,
            selected_stocks: selected,
            stake: 10,
          }),
        ),
      );
      expect(placed.map((p) => p.status)).toEqual([200, 200]);
      return { zoe: ref, betIds: placed.map((p) => p.body.bet.bet_id as string) };
    }, 20_000);

    // The wallet applies each settle but holds its answer far beyond the service's timeout.
    wallet.setBehaviour({ mode: 'slow', delayMs: 60_000 });
    await eventually(async () => betIds.every((id) => wallet!.settleLog().some((e) => e.bet_id === id)), 20_000);
    await svc.kill9();

    // What survived the kill: both settlements pending, as the admin CLI shows them.
    const pending = (await svc.admin('settlements', 'list', '--status', 'pending')).settlements;
    expect(pending.map((x: any) => x.bet_id).sort()).toEqual([...betIds].sort());
    expect(wallet.store.player(zoe)).toEqual({ currency: 'EUR', balance: 3000 - 2000 + 1900, reserved: 0 });

    wallet.setBehaviour({ mode: 'ok' });
    // Same store, same port, same master key: a plain restart.
    await svc.start();
    await eventually(async () => {
      const r = await call('GET', '/v1/settlements?status=delivered');
      return r.status === 200 && betIds.every((id) => r.body.settlements.some((x: any) => x.bet_id === id));
    }, 20_000);

    for (const id of betIds) {
      const seen = wallet.settleLog().filter((e) => e.bet_id === id);
      expect(seen.filter((e) => e.result === 'credited')).toHaveLength(1);
      expect(seen.filter((e) => e.result === 'replayed').length).toBeGreaterThanOrEqual(1);
      const bet = await call('GET', `/v1/bets/${id}`);
      expect(bet.body.settlement.status).toBe('delivered');
    }
    // 30.00 − 2 × 10.00 + 19.00 (one 4-of-8 bet wins 10.00 × 8 × 0.95 / 4), credited once.
    expect(wallet.store.player(zoe)).toEqual({ currency: 'EUR', balance: 2900, reserved: 0 });
    // Two service starts, an admin CLI call and a kill: ~20 s on a quiet machine, more on a busy one.
  }, 120_000);
});
