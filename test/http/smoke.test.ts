import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, startTestApp, STORES, type TestApp } from '../support/harness';

describe.each(STORES)('smoke on %s', (store) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ store, env: { CRASH_BETTING_WINDOW_MS: '400', CRASH_PAUSE_MS: '100' } });
  });
  afterAll(async () => t?.close());

  it('places a bet in the open round and sees it settle', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const placed = await eventually(async () => {
      const r = await call(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: 'p1', amount: 100, auto_cashout: 1.01 },
        { idempotencyKey: `k-${Math.random()}` },
      );
      return r.status === 200 ? r : undefined;
    });
    expect(placed.body).toMatchObject({ external_user_id: 'p1', amount: 100, auto_cashout: 1.01 });
    const settled = await eventually(async () => {
      const r = await call('GET', `/api/public/v1/bets/${placed.body.bet_id}`);
      return r.body.status !== 'active' ? r : undefined;
    }, 20_000);
    expect(['cashed_out', 'lost']).toContain(settled.body.status);
  });
});
