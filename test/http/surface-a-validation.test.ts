import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, startTestApp, type TestApp } from '../support/harness';

/** Every class of bad input gets a 4xx naming the problem, and nothing is written. */
describe('Surface A request validation', () => {
  let t: TestApp;
  let call: ReturnType<typeof client>;
  let n = 0;
  const key = () => `v-${++n}`;

  beforeAll(async () => {
    t = await startTestApp({ env: { CRASH_BETTING_WINDOW_MS: '600000', BODY_LIMIT_BYTES: '2048' } });
    call = client(t.baseUrl, await t.createOperator());
    await eventually(async () => (await call('GET', '/api/public/v1/rounds/current')).body?.status === 'open');
  });
  afterAll(async () => t?.close());

  const place = (body: unknown, extra: Parameters<typeof call>[3] = {}) =>
    call('POST', '/api/public/v1/place-bet', body, { idempotencyKey: key(), ...extra });

  const cases: [string, unknown, number, string, RegExp][] = [
    [
      'amount 0',
      { external_user_id: 'u', amount: 0 },
      400,
      'VALIDATION_FAILED',
      /"amount" must be an integer from 1 to 1000000/,
    ],
    ['amount above the limit', { external_user_id: 'u', amount: 1_000_001 }, 400, 'VALIDATION_FAILED', /"amount"/],
    ['fractional amount', { external_user_id: 'u', amount: 1.5 }, 400, 'VALIDATION_FAILED', /"amount"/],
    ['amount as a string', { external_user_id: 'u', amount: '100' }, 400, 'VALIDATION_FAILED', /"amount"/],
    ['missing amount', { external_user_id: 'u' }, 400, 'VALIDATION_FAILED', /field "amount" is required/],
    ['empty external_user_id', { external_user_id: '', amount: 1 }, 400, 'VALIDATION_FAILED', /"external_user_id"/],
    [
      'external_user_id of 121 chars',
      { external_user_id: 'x'.repeat(121), amount: 1 },
      400,
      'VALIDATION_FAILED',
      /"external_user_id"/,
    ],
    [
      'auto_cashout 1.00',
      { external_user_id: 'u', amount: 1, auto_cashout: 1 },
      400,
      'VALIDATION_FAILED',
      /"auto_cashout"/,
    ],
    [
      'auto_cashout with 3 decimals',
      { external_user_id: 'u', amount: 1, auto_cashout: 1.015 },
      400,
      'VALIDATION_FAILED',
      /"auto_cashout" must have at most 2 decimals/,
    ],
    [
      'auto_cashout as a string',
      { external_user_id: 'u', amount: 1, auto_cashout: '2' },
      400,
      'VALIDATION_FAILED',
      /"auto_cashout"/,
    ],
    [
      'an unknown field',
      { external_user_id: 'u', amount: 1, currency: 'EUR' },
      400,
      'UNKNOWN_FIELD',
      /unknown field "currency"/,
    ],
    ['an array body', [1, 2], 400, 'VALIDATION_FAILED', /the body must be a JSON object/],
  ];

  it.each(cases)('refuses %s', async (_name, body, status, code, message) => {
    const r = await place(body);
    expect(r.status).toBe(status);
    expect(r.body.code).toBe(code);
    expect(r.body.error).toMatch(message);
  });

  it('accepts the boundaries exactly', async () => {
    const low = await place({ external_user_id: 'u', amount: 1, auto_cashout: 1.01 });
    expect(low.status).toBe(200);
    expect(low.body).toMatchObject({ amount: 1, auto_cashout: 1.01, external_user_id: 'u' });
    const high = await place({ external_user_id: 'x'.repeat(120), amount: 1_000_000, auto_cashout: null });
    expect(high.status).toBe(200);
    expect(high.body.auto_cashout).toBeNull();
  });

  it('refuses malformed JSON', async () => {
    const r = await place(undefined, { rawBody: '{"external_user_id": "u", ' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('MALFORMED_JSON');
  });

  it('refuses a number that would read as another value, instead of rounding it into a bet', async () => {
    for (const [rawBody, shown] of [
      ['{"external_user_id":"u","amount":0.99999999999999999}', '0.99999999999999999'],
      ['{"external_user_id":"u","amount":999999.99999999999}', '999999.99999999999'],
      ['{"external_user_id":"u","amount":100,"auto_cashout":1.0099999999999999999999}', '1.0099999999999999999999'],
    ]) {
      const r = await place(undefined, { rawBody });
      expect(r.status, rawBody).toBe(400);
      expect(r.body).toEqual({
        code: 'VALIDATION_FAILED',
        error: `the number ${shown} cannot be read exactly: send at most 15 significant digits`,
      });
    }
  });

  it('refuses a key repeated with another value', async () => {
    const r = await place(undefined, { rawBody: '{"external_user_id":"u","amount":1,"amount":900}' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('DUPLICATE_JSON_KEY');
    expect(r.body.error).toMatch(/amount/);
  });

  it('refuses an oversized body with 413', async () => {
    const r = await place({ external_user_id: 'u', amount: 1, pad: 'x'.repeat(4000) });
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('BODY_TOO_LARGE');
  });

  it('refuses a body that is not JSON', async () => {
    const r = await call('POST', '/api/public/v1/place-bet', undefined, {
      rawBody: 'amount=1',
      idempotencyKey: key(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(r.status).toBe(415);
    expect(r.body.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('requires an Idempotency-Key on place-bet and cashout', async () => {
    const a = await call('POST', '/api/public/v1/place-bet', { external_user_id: 'u', amount: 1 });
    expect(a.status).toBe(400);
    expect(a.body).toEqual({
      error: 'the Idempotency-Key header is required on this POST',
      code: 'IDEMPOTENCY_KEY_MISSING',
    });
    const b = await call('POST', '/api/public/v1/cashout', { bet_id: '00000000-0000-4000-8000-000000000000' });
    expect(b.status).toBe(400);
    expect(b.body.code).toBe('IDEMPOTENCY_KEY_MISSING');
  });

  it('refuses a cash-out of a bet id that is not a UUID, and of an unknown bet', async () => {
    const bad = await call('POST', '/api/public/v1/cashout', { bet_id: 'nope' }, { idempotencyKey: key() });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('VALIDATION_FAILED');
    const unknown = await call(
      'POST',
      '/api/public/v1/cashout',
      { bet_id: '00000000-0000-4000-8000-000000000000' },
      { idempotencyKey: key() },
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('BET_NOT_FOUND');
  });

  it('answers an unknown route with a 404 in the surface format', async () => {
    const r = await call('GET', '/api/public/v1/nothing-here');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: 'no route GET /api/public/v1/nothing-here', code: 'NOT_FOUND' });
  });

  it('wrote no bet for any refused request', async () => {
    const rows = await t.app.db.all<{ amount: number }>('SELECT amount FROM bets ORDER BY amount');
    expect(rows.map((r) => Number(r.amount))).toEqual([1, 1_000_000]);
  });
});

describe('Surface A query strings', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engines: false });
  });
  afterAll(async () => t?.close());

  it('refuses a query parameter the route does not declare', async () => {
    const call = client(t.baseUrl, await t.createOperator());
    const r = await call('GET', '/api/public/v1/rounds/current?limt=5');
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      error: 'unknown querystring field "limt": this endpoint does not accept it',
      code: 'UNKNOWN_FIELD',
    });
  });
});
