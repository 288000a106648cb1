import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/signing/request-signature';
import { client, startTestApp, type TestApp, type TestOperator } from '../support/harness';

describe('Surface A authentication', () => {
  let t: TestApp;
  let op: TestOperator;
  beforeAll(async () => {
    t = await startTestApp({ engines: false });
    op = await t.createOperator();
  });
  afterAll(async () => t?.close());

  const raw = async (path: string, headers: Record<string, string>, body?: string, method = 'POST') => {
    const res = await request(`${t.baseUrl}${path}`, { method: method as 'POST', headers, body });
    return { status: res.statusCode, headers: res.headers, body: (await res.body.json()) as Record<string, unknown> };
  };

  it('accepts a request signed over the exact bytes, path and timestamp', async () => {
    const r = await client(t.baseUrl, op)('GET', '/api/public/v1/rounds/current');
    // No round yet (engines off), but the request got past authentication to the domain.
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: 'no Crash round has been played yet', code: 'ROUND_NOT_FOUND' });
  });

  it('refuses a request with no credentials', async () => {
    const r = await raw('/api/public/v1/place-bet', { 'content-type': 'application/json' }, '{}');
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ error: 'the x-api-key header is missing', code: 'MISSING_CREDENTIALS' });
  });

  it('refuses an unknown API key', async () => {
    const r = await client(t.baseUrl, { ...op, apiKey: 'pk_nobody' })('GET', '/api/public/v1/rounds/current');
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('UNKNOWN_API_KEY');
  });

  it('refuses a signature made with the wrong secret', async () => {
    const r = await client(t.baseUrl, op)('GET', '/api/public/v1/rounds/current', undefined, { secret: 'sk_wrong' });
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ code: 'INVALID_SIGNATURE' });
    expect(r.body.error).toMatch(/^signature does not match/);
  });

  it('refuses a body changed after signing (signature covers the raw bytes)', async () => {
    const ts = String(Date.now());
    const signed = '{"external_user_id":"u","amount":1}';
    const sent = '{"external_user_id":"u","amount":9}';
    const r = await raw(
      '/api/public/v1/place-bet',
      {
        'content-type': 'application/json',
        'x-api-key': op.apiKey,
        'x-timestamp': ts,
        'x-signature': signRequest(op.apiSecret, 'POST', '/api/public/v1/place-bet', ts, signed),
        'idempotency-key': 'tamper',
      },
      sent,
    );
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('INVALID_SIGNATURE');
  });

  it('signs the path with its query string', async () => {
    const ts = String(Date.now());
    const headers = {
      'x-api-key': op.apiKey,
      'x-timestamp': ts,
      'x-signature': signRequest(op.apiSecret, 'GET', '/api/public/v1/rounds/current', ts, ''),
    };
    const r = await raw('/api/public/v1/rounds/current?x=1', headers, undefined, 'GET');
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('INVALID_SIGNATURE');
  });

  it('refuses timestamps more than 5 minutes old or ahead, and accepts ones just inside', async () => {
    const call = client(t.baseUrl, op);
    const old = await call('GET', '/api/public/v1/rounds/current', undefined, { timestamp: Date.now() - 301_000 });
    expect(old.status).toBe(401);
    expect(old.body.code).toBe('STALE_TIMESTAMP');
    expect(old.body.error).toMatch(/old; the limit is 300 s/);
    const ahead = await call('GET', '/api/public/v1/rounds/current', undefined, { timestamp: Date.now() + 301_000 });
    expect(ahead.status).toBe(401);
    expect(ahead.body.code).toBe('STALE_TIMESTAMP');
    const inside = await call('GET', '/api/public/v1/rounds/current', undefined, { timestamp: Date.now() - 290_000 });
    expect(inside.status).toBe(404);
  });

  it('refuses a non-numeric timestamp by name', async () => {
    const r = await client(t.baseUrl, op)('GET', '/api/public/v1/rounds/current', undefined, {
      headers: { 'x-timestamp': 'yesterday' },
    });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('INVALID_SIGNATURE');
    expect(r.body.error).toMatch(/x-timestamp must be milliseconds since epoch/);
  });

  it('keeps accepting the previous secret during the rotation overlap', async () => {
    const other = await t.createOperator({ name: 'rotating' });
    const rotated = await t.app.services.operators.rotateSecret(other.id, 60_000);
    const withOld = await client(t.baseUrl, other)('GET', '/api/public/v1/rounds/current');
    const withNew = await client(t.baseUrl, { ...other, apiSecret: rotated.apiSecret })(
      'GET',
      '/api/public/v1/rounds/current',
    );
    expect(withOld.status).toBe(404);
    expect(withNew.status).toBe(404);
    const expired = await t.createOperator({ name: 'rotated-now' });
    await t.app.services.operators.rotateSecret(expired.id, 0);
    const stale = await client(t.baseUrl, expired)('GET', '/api/public/v1/rounds/current');
    expect(stale.status).toBe(401);
    expect(stale.body.code).toBe('INVALID_SIGNATURE');
  });

  // A second rotation inside the first one's overlap (the dashboard form submitted twice) used to keep
  // only the secret it replaced: servers still signing with the one before were locked out at once.
  it('keeps the secret before a double rotation until its own overlap ends; overlap 0 ends them all', async () => {
    const twice = await t.createOperator({ name: 'rotated-twice' });
    const first = await t.app.services.operators.rotateSecret(twice.id, 60_000);
    const second = await t.app.services.operators.rotateSecret(twice.id, 60_000);
    const status = async (apiSecret: string) =>
      (await client(t.baseUrl, { ...twice, apiSecret })('GET', '/api/public/v1/rounds/current')).status;
    expect(await status(twice.apiSecret)).toBe(404);
    expect(await status(first.apiSecret)).toBe(404);
    expect(await status(second.apiSecret)).toBe(404);
    const third = await t.app.services.operators.rotateSecret(twice.id, 0);
    expect([await status(twice.apiSecret), await status(first.apiSecret), await status(second.apiSecret)]).toEqual([
      401, 401, 401,
    ]);
    expect(await status(third.apiSecret)).toBe(404);
  });

  it('refuses a disabled operator', async () => {
    const off = await t.createOperator({ name: 'off' });
    await t.app.services.operators.setStatus(off.id, 'disabled');
    const r = await client(t.baseUrl, off)('GET', '/api/public/v1/rounds/current');
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('OPERATOR_DISABLED');
  });

  it('rate-limits per operator with a token bucket and says when to retry', async () => {
    const limited = await t.createOperator({ name: 'limited' });
    await t.app.services.operators.updateSettings(limited.id, { rate_limit: { refill_per_second: 1, burst: 5 } });
    const call = client(t.baseUrl, limited);
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 7; i++) {
      last = await call('GET', '/api/public/v1/rounds/current');
      statuses.push(last.status);
    }
    expect(statuses).toEqual([404, 404, 404, 404, 404, 429, 429]);
    expect(last!.body).toMatchObject({ code: 'RATE_LIMITED' });
    expect(last!.headers['retry-after']).toBe('1');
    expect(last!.headers['ratelimit-remaining']).toBe('0');
    // Another operator's bucket is untouched.
    expect((await client(t.baseUrl, op)('GET', '/api/public/v1/rounds/current')).status).toBe(404);
  });
});
