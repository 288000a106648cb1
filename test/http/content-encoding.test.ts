import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/signing/request-signature';
import { client, eventually, startTestApp, type TestApp, type TestOperator } from '../support/harness';

/** Bodies are taken only as plain UTF-8 JSON: an encoded body or another charset is 415, and nothing is written. */
describe('Content-Encoding and charset of request bodies', () => {
  let t: TestApp;
  let op: TestOperator;
  let callA: ReturnType<typeof client>;
  let callB: ReturnType<typeof client>;
  let n = 0;
  const key = () => `enc-${++n}`;

  beforeAll(async () => {
    t = await startTestApp({ env: { CRASH_BETTING_WINDOW_MS: '600000' } });
    op = await t.createOperator();
    callA = client(t.baseUrl, op, 'A');
    callB = client(t.baseUrl, op, 'B');
    await eventually(async () => (await callA('GET', '/api/public/v1/rounds/current')).body?.status === 'open');
  });
  afterAll(async () => t?.close());

  const betsOf = async (player: string) =>
    (await t.app.services.bets.find({ operatorId: op.id, player, limit: 10 })).length;
  const place = (player: string, headers: Record<string, string>) =>
    callA(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: player, amount: 100 },
      { idempotencyKey: key(), headers },
    );

  it('refuses a plain JSON body labelled gzip on Surface A, and places no bet', async () => {
    const r = await place('gz-label', { 'content-encoding': 'gzip' });
    expect(r.status).toBe(415);
    expect(r.body).toEqual({ error: expect.stringMatching(/unencoded/), code: 'UNSUPPORTED_MEDIA_TYPE' });
    expect(await betsOf('gz-label')).toBe(0);
  });

  it('refuses a really gzipped body with 415, not as malformed JSON', async () => {
    const path = '/api/public/v1/place-bet';
    const raw = gzipSync(JSON.stringify({ external_user_id: 'gz-real', amount: 100 }));
    const timestamp = String(Date.now());
    const res = await request(`${t.baseUrl}${path}`, {
      method: 'POST',
      headers: {
        'x-api-key': op.apiKey,
        'x-timestamp': timestamp,
        'x-signature': signRequest(op.apiSecret, 'POST', path, timestamp, raw),
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'idempotency-key': key(),
      },
      body: raw,
    });
    expect(res.statusCode).toBe(415);
    expect(((await res.body.json()) as { code: string }).code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(await betsOf('gz-real')).toBe(0);
  });

  it.each(['utf-16', 'latin1', 'ISO-8859-1', '"utf-16"'])(
    'refuses charset=%s with 415, and places no bet',
    async (charset) => {
      const player = `cs-${charset.replace(/\W/g, '')}`;
      const r = await place(player, { 'content-type': `application/json; charset=${charset}` });
      expect(r.status).toBe(415);
      expect(r.body).toEqual({ error: expect.stringMatching(/UTF-8/), code: 'UNSUPPORTED_MEDIA_TYPE' });
      expect(await betsOf(player)).toBe(0);
    },
  );

  it.each([
    ['no charset', { 'content-type': 'application/json' }],
    ['charset=utf-8', { 'content-type': 'application/json; charset=utf-8' }],
    ['charset="UTF-8" after another parameter', { 'content-type': 'application/json; v=1; charset="UTF-8"' }],
    ['Content-Encoding: identity', { 'content-encoding': 'identity' }],
  ])('accepts %s', async (name, headers) => {
    const player = `ok-${name.replace(/\W/g, '')}`.slice(0, 100);
    const r = await place(player, headers);
    expect(r.status).toBe(200);
    expect(await betsOf(player)).toBe(1);
  });

  it('answers in Surface B shape on Surface B', async () => {
    const body = { player_ref: 'p1', currency: 'EUR', return_url: 'https://casino.test/' };
    const gz = await callB('POST', '/v1/sessions/launch', body, { headers: { 'content-encoding': 'br' } });
    expect(gz.status).toBe(415);
    expect(gz.body).toEqual({ error: 'UNSUPPORTED_MEDIA_TYPE', message: expect.stringMatching(/unencoded/) });
    const utf16 = await callB('POST', '/v1/sessions/launch', body, {
      headers: { 'content-type': 'application/json; charset=UTF-16' },
    });
    expect(utf16.status).toBe(415);
    expect(utf16.body.error).toBe('UNSUPPORTED_MEDIA_TYPE');
    const plain = await callB('POST', '/v1/sessions/launch', body, {
      headers: { 'content-type': 'application/json; charset=UTF-8' },
    });
    expect(plain.status).toBe(200);
  });
});
