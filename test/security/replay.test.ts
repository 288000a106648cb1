import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/signing/request-signature';
import { client, eventually, redisEnv, startTestApp, STORES } from '../support/harness';
import type { TestApp, TestOperator } from '../support/harness';

/**
 * A captured signed request sent again byte for byte within the 5-minute window. With the same
 * Idempotency-Key it is the idempotent retry (the stored answer); under a new key, or on a route
 * that has no key, it is refused with 409 REQUEST_REPLAYED and moves nothing.
 */
const KINDS = [
  ...STORES.map((store) => ({ label: `${store} store`, store, redis: false })),
  { label: 'Redis (SQLite store)', store: 'sqlite' as const, redis: true },
];

async function countOf(t: TestApp, table: 'bets' | 'sessions', operatorId: string): Promise<number> {
  const sql = `SELECT COUNT(*) AS n FROM ${table} WHERE operator_id = ?`;
  const row = await t.app.db.get<{ n: number | string }>(sql, [operatorId]);
  return Number(row?.n ?? 0);
}
const betsOf = (t: TestApp, operatorId: string) => countOf(t, 'bets', operatorId);

async function bettingOpen(call: ReturnType<typeof client>): Promise<void> {
  await eventually(async () => (await call('GET', '/api/public/v1/rounds/current')).body?.status === 'open', 15_000);
}

describe.each(KINDS)('signed request replay on $label', ({ store, redis }) => {
  let t: TestApp;
  let op: TestOperator;
  let a: ReturnType<typeof client>;
  let b: ReturnType<typeof client>;

  beforeAll(async () => {
    t = await startTestApp({ store, env: { CRASH_BETTING_WINDOW_MS: '60000', ...(redis ? redisEnv() : {}) } });
    op = await t.createOperator();
    a = client(t.baseUrl, op, 'A');
    b = client(t.baseUrl, op, 'B');
  });
  afterAll(async () => t?.close());

  it('refuses a place-bet replayed under a new Idempotency-Key: one bet, one stake', async () => {
    await bettingOpen(a);
    const timestamp = Date.now();
    const body = { external_user_id: 'alice', amount: 1_000 };
    const first = await a('POST', '/api/public/v1/place-bet', body, { timestamp, idempotencyKey: 'bet-original' });
    expect(first.status).toBe(200);

    const replay = await a('POST', '/api/public/v1/place-bet', body, { timestamp, idempotencyKey: 'bet-forged' });
    expect(replay.status).toBe(409);
    const refusal = { code: 'REQUEST_REPLAYED', error: expect.stringContaining('another Idempotency-Key') };
    expect(replay.body).toEqual(refusal);
    expect(await betsOf(t, op.id)).toBe(1);
  });

  it('answers a repeated verify-signature, which changes nothing, and records nothing for it', async () => {
    const timestamp = Date.now();
    const body = { endpoint_secret: 'whsec_x', body: '{}', signature: 't=1,v1=00' };
    const first = await a('POST', '/api/public/v1/webhooks/verify-signature', body, { timestamp });
    const again = await a('POST', '/api/public/v1/webhooks/verify-signature', body, { timestamp });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it('still replays the stored answer when the same bytes come with the same Idempotency-Key', async () => {
    await bettingOpen(a);
    const timestamp = Date.now();
    const body = { external_user_id: 'bob', amount: 700 };
    const first = await a('POST', '/api/public/v1/place-bet', body, { timestamp, idempotencyKey: 'bet-retry' });
    expect(first.status).toBe(200);
    const again = await a('POST', '/api/public/v1/place-bet', body, { timestamp, idempotencyKey: 'bet-retry' });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replay']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await betsOf(t, op.id)).toBe(2);
  });

  it('refuses a replayed cash-out under a new key', async () => {
    await bettingOpen(a);
    const bet = { external_user_id: 'dora', amount: 300 };
    const placed = await a('POST', '/api/public/v1/place-bet', bet, { idempotencyKey: 'bet-dora' });
    expect(placed.status).toBe(200);
    const timestamp = Date.now();
    const body = { bet_id: placed.body.bet_id };
    // Betting is still open, so the cash-out is refused (and that refusal is stored under its key).
    const first = await a('POST', '/api/public/v1/cashout', body, { timestamp, idempotencyKey: 'co-1' });
    expect(first.status).toBe(409);
    expect(first.body.code).toBe('ROUND_NOT_RUNNING');
    const replay = await a('POST', '/api/public/v1/cashout', body, { timestamp, idempotencyKey: 'co-2' });
    expect(replay.status).toBe(409);
    expect(replay.body.code).toBe('REQUEST_REPLAYED');
  });

  it('refuses a replayed webhook endpoint creation and secret rotation on both surfaces', async () => {
    const timestamp = Date.now();
    const create = { url: 'https://hooks.example.test/replay' };
    const made = await a('POST', '/api/public/v1/webhook-endpoints', create, { timestamp });
    expect(made.status).toBe(201);
    const again = await a('POST', '/api/public/v1/webhook-endpoints', create, { timestamp });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ code: 'REQUEST_REPLAYED', error: expect.any(String) });
    const listed = await a('GET', '/api/public/v1/webhook-endpoints');
    expect(listed.body.endpoints).toHaveLength(1);

    const id = made.body.endpoint_id;
    const rotatePath = `/v1/webhook-endpoints/${id}/rotate-secret`;
    const rotated = await b('POST', rotatePath, {}, { timestamp });
    expect(rotated.status).toBe(200);
    const rotatedAgain = await b('POST', rotatePath, {}, { timestamp });
    expect(rotatedAgain.status).toBe(409);
    expect(rotatedAgain.body).toEqual({ error: 'REQUEST_REPLAYED', message: expect.any(String) });
  });

  it('refuses a replayed Surface B session launch', async () => {
    const timestamp = Date.now();
    const body = { player_ref: 'p-1', currency: 'EUR', return_url: 'https://casino.example.test/back' };
    const first = await b('POST', '/v1/sessions/launch', body, { timestamp });
    expect(first.status).toBe(200);
    const replay = await b('POST', '/v1/sessions/launch', body, { timestamp });
    expect(replay.status).toBe(409);
    expect(replay.body.error).toBe('REQUEST_REPLAYED');
    expect(await countOf(t, 'sessions', op.id)).toBe(1);
  });

  it('does not let a change of hex case in the signature make it a new request', async () => {
    const timestamp = Date.now();
    const body = { player_ref: 'p-2', currency: 'EUR', return_url: 'https://casino.example.test/back' };
    const first = await b('POST', '/v1/sessions/launch', body, { timestamp });
    expect(first.status).toBe(200);
    const raw = JSON.stringify(body);
    const upper = signRequest(op.apiSecret, 'POST', '/v1/sessions/launch', String(timestamp), raw).toUpperCase();
    const replay = await b('POST', '/v1/sessions/launch', body, { timestamp, headers: { 'X-Signature': upper } });
    expect(replay.status).toBe(409);
  });
});

describe('a replay sent to another instance', () => {
  for (const shared of ['PostgreSQL', 'Redis'] as const) {
    it(`is refused when the two instances share ${shared}`, async () => {
      const env = { CRASH_BETTING_WINDOW_MS: '60000', ...(shared === 'Redis' ? redisEnv() : {}) };
      const first = await startTestApp({ store: 'postgres', env });
      const second = await startTestApp({ replicaOf: first, engines: false, env });
      try {
        const op = await first.createOperator();
        const one = client(first.baseUrl, op, 'A');
        const two = client(second.baseUrl, op, 'A');
        await bettingOpen(one);
        const timestamp = Date.now();
        const body = { external_user_id: 'carol', amount: 500 };
        const placed = await one('POST', '/api/public/v1/place-bet', body, { timestamp, idempotencyKey: 'k-1' });
        expect(placed.status).toBe(200);
        const replay = await two('POST', '/api/public/v1/place-bet', body, { timestamp, idempotencyKey: 'k-2' });
        expect(replay.status).toBe(409);
        expect(replay.body.code).toBe('REQUEST_REPLAYED');
        expect(await betsOf(first, op.id)).toBe(1);
      } finally {
        await second.close();
        await first.close();
      }
    });
  }
});
