import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/signing/request-signature';
import { client, startTestApp, STORES, type TestApp, type TestOperator } from '../support/harness';

const PASSWORD = 'long enough password';
const FORM = 'application/x-www-form-urlencoded';

/** Rows a refused request must not have written. */
async function written(t: TestApp): Promise<Record<string, number>> {
  const count = async (table: string) =>
    Number((await t.app.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))!.n);
  return {
    bets: await count('bets'),
    idempotency_keys: await count('idempotency_keys'),
    sessions: await count('sessions'),
    webhook_endpoints: await count('webhook_endpoints'),
  };
}

/** Sends raw bytes, signed over exactly those bytes as an integrator's client would. */
async function sendBytes(t: TestApp, op: TestOperator, surface: 'A' | 'B', path: string, body: Buffer) {
  const ts = String(Date.now());
  const keyHeader = surface === 'A' ? 'x-api-key' : 'x-operator-key';
  const names = [keyHeader, 'x-timestamp', 'x-signature'];
  const res = await request(`${t.baseUrl}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'idempotency-key': `k-${Math.random()}`,
      [names[0]!]: op.apiKey,
      [names[1]!]: ts,
      [names[2]!]: signRequest(op.apiSecret, 'POST', path, ts, body),
    },
    body,
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

describe.each(STORES)('bad input on %s is a 4xx in the surface shape, with nothing written', (store) => {
  let t: TestApp;
  let op: TestOperator;
  beforeAll(async () => {
    t = await startTestApp({ store, engines: false });
    op = await t.createOperator();
  });
  afterAll(async () => t?.close());

  // A JSON escape of half a UTF-16 surrogate pair is valid JSON syntax but no Unicode text.
  const LONE = '"p\\ud800"';

  it('a lone surrogate on the monetary routes: 400 MALFORMED_JSON, no bet, no idempotency record', async () => {
    const before = await written(t);
    const a = await client(t.baseUrl, op, 'A')('POST', '/api/public/v1/place-bet', undefined, {
      rawBody: `{"external_user_id":${LONE},"amount":100}`,
      idempotencyKey: 'lone-a',
    });
    expect(a.status).toBe(400);
    expect(a.body).toEqual({ error: expect.stringMatching(/lone UTF-16 surrogate/), code: 'MALFORMED_JSON' });

    const cashout = await client(t.baseUrl, op, 'A')('POST', '/api/public/v1/cashout', undefined, {
      rawBody: `{"bet_id":"\\udc00"}`,
      idempotencyKey: 'lone-c',
    });
    expect(cashout.status).toBe(400);
    expect(cashout.body.code).toBe('MALFORMED_JSON');

    const b = await client(t.baseUrl, op, 'B')('POST', '/v1/bets/reserve', undefined, {
      rawBody: `{"idempotency_key":${LONE},"session_id":"s","round_id":"r","selected_stocks":["AAPL"],"stake":"1.00"}`,
    });
    expect(b.status).toBe(400);
    expect(b.body).toEqual({ error: 'MALFORMED_JSON', message: expect.stringMatching(/lone UTF-16 surrogate/) });
    expect(await written(t)).toEqual(before);
  });

  it('a lone surrogate on the management routes and session launch: 400, nothing created', async () => {
    const before = await written(t);
    const launch = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', undefined, {
      rawBody: `{"player_ref":${LONE},"currency":"EUR","return_url":"https://casino.test/"}`,
    });
    expect(launch.status).toBe(400);
    expect(launch.body.error).toBe('MALFORMED_JSON');
    const endpoint = await client(t.baseUrl, op, 'A')('POST', '/api/public/v1/webhook-endpoints', undefined, {
      rawBody: `{"url":"https://hooks.example.com/\\ud83d","events":["bet.settled"]}`,
    });
    expect(endpoint.status).toBe(400);
    expect(endpoint.body.code).toBe('MALFORMED_JSON');
    expect(await written(t)).toEqual(before);
    // A well-formed pair (an emoji) is text like any other.
    const pair = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', undefined, {
      rawBody: '{"player_ref":"p\\ud83d\\ude00","currency":"EUR","return_url":"https://casino.test/"}',
    });
    expect(pair.status).toBe(200);
  });

  it('a NUL character, in a body (\\u0000) or the URL (%00), is a 400 (PostgreSQL cannot store it)', async () => {
    const before = await written(t);
    const launch = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', undefined, {
      rawBody: '{"player_ref":"p\\u0000","currency":"EUR","return_url":"https://casino.test/"}',
    });
    expect(launch.status).toBe(400);
    expect(launch.body).toEqual({ error: 'VALIDATION_FAILED', message: expect.stringMatching(/NUL character/) });
    const bet = await client(t.baseUrl, op, 'A')('POST', '/api/public/v1/place-bet', undefined, {
      rawBody: '{"external_user_id":"p\\u0000","amount":100}',
      idempotencyKey: 'nul-a',
    });
    expect(bet.status).toBe(400);
    expect(await written(t)).toEqual(before);
    const a = client(t.baseUrl, op, 'A');
    const paths = [
      '/api/public/v1/webhook-deliveries?endpoint_id=%00',
      '/api/public/v1/webhook-deliveries/a%00',
      '/api/public/v1/compliance/flags?player=a%00',
    ];
    for (const path of paths) {
      const r = await a('GET', path);
      expect(r.status, path).toBe(400);
      expect(r.body, path).toEqual({ error: 'the URL contains a NUL character (%00)', code: 'VALIDATION_FAILED' });
    }
    const b = await client(t.baseUrl, op, 'B')('GET', '/v1/rounds/a%00');
    expect(b.status).toBe(400);
    expect(b.body).toEqual({ error: 'VALIDATION_FAILED', message: 'the URL contains a NUL character (%00)' });
  });

  it('bytes that are not UTF-8: 400 MALFORMED_JSON on both surfaces, nothing written', async () => {
    const before = await written(t);
    const notUtf8 = Buffer.from([0xff, 0xfe]);
    const invalid = Buffer.concat([Buffer.from('{"external_user_id":"p'), notUtf8, Buffer.from('","amount":100}')]);
    const a = await sendBytes(t, op, 'A', '/api/public/v1/place-bet', invalid);
    expect(a).toEqual({ status: 400, body: { error: 'the body is not valid UTF-8', code: 'MALFORMED_JSON' } });
    const launchRest = Buffer.from('","currency":"EUR","return_url":"https://casino.test/"}');
    const launch = Buffer.concat([Buffer.from('{"player_ref":"p'), Buffer.from([0xc3]), launchRest]);
    const b = await sendBytes(t, op, 'B', '/v1/sessions/launch', launch);
    expect(b).toEqual({ status: 400, body: { error: 'MALFORMED_JSON', message: 'the body is not valid UTF-8' } });
    expect(await written(t)).toEqual(before);
  });
});

describe('bad input outside the API surfaces', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engines: false });
  });
  afterAll(async () => t?.close());

  const raw = async (method: string, path: string, headers: Record<string, string>, body?: string) => {
    const res = await request(`${t.baseUrl}${path}`, { method: method as 'POST', headers, body });
    return { status: res.statusCode, text: await res.body.text(), type: String(res.headers['content-type']) };
  };

  it('the dashboard keeps 413 for an oversized form and 415 for a body that is not a form', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const big = await raw('POST', '/dashboard/login', form, `email=${'x'.repeat(20_000)}`);
    expect(big.status).toBe(413);
    expect(big.text).toContain('The form is larger than the dashboard accepts.');
    const plain = await raw('POST', '/dashboard/login', { 'content-type': 'text/plain' }, 'email=a');
    expect(plain.status).toBe(415);
    expect(plain.text).toContain('accepts forms');
    const signedIn = await raw('POST', '/dashboard/logout', { 'content-type': 'application/xml' }, '<a/>');
    expect(signedIn.status).toBe(415);
  });

  it('a dashboard form sent as JSON with values that are not text is refused, never a 500', async () => {
    await t.app.services.dashboardUsers.createUser({
      operatorId: (await t.createOperator()).id,
      email: 'json@example.com',
      password: PASSWORD,
    });
    const jar: string[] = [];
    const go = async (method: string, path: string, body?: string, type = FORM, extra: Record<string, string> = {}) => {
      const res = await fetch(`${t.baseUrl}${path}`, {
        method,
        redirect: 'manual',
        headers: { cookie: jar.join('; '), ...(body === undefined ? {} : { 'content-type': type }), ...extra },
        body,
      });
      for (const c of res.headers.getSetCookie()) jar.push(c.split(';')[0]!);
      return { status: res.status, text: await res.text() };
    };
    const csrfOf = (html: string): string => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
    const login = csrfOf((await go('GET', '/dashboard/login')).text);
    const json = 'application/json';
    const wrongToken = JSON.stringify({ _csrf: 5, email: 'json@example.com', password: 'x' });
    expect((await go('POST', '/dashboard/login', wrongToken, json)).status).toBe(403);
    const numbers = JSON.stringify({ _csrf: login, email: 5, password: 7 });
    expect((await go('POST', '/dashboard/login', numbers, json)).status).toBe(401);
    const credentials = `_csrf=${login}&email=json%40example.com&password=${encodeURIComponent(PASSWORD)}`;
    const signedIn = await go('POST', '/dashboard/login', credentials);
    expect(signedIn.status).toBe(303);
    const csrf = csrfOf((await go('GET', '/dashboard/credentials')).text);
    for (const body of [{ _csrf: csrf, url: 5, events: 3 }, { url: {}, events: [1] }, null]) {
      const r = await go('POST', '/dashboard/webhooks', JSON.stringify(body), json, { 'x-csrf-token': csrf });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.text).not.toContain('Something went wrong on our side');
    }
  });

  it('broken JSON sent anywhere else is a 400 in Surface B shape, not a 500', async () => {
    for (const path of ['/healthz', '/play', '/play/bets', '/nowhere']) {
      const r = await raw('POST', path, { 'content-type': 'application/json' }, '{"a":');
      expect(r.status, path).toBe(400);
      const expected = { error: 'MALFORMED_JSON', message: expect.stringMatching(/not valid JSON/) };
      expect(JSON.parse(r.text), path).toEqual(expected);
    }
  });

  it('a URL that is not valid percent-encoding is a 400 in the surface shape', async () => {
    const a = await raw('GET', '/api/public/v1/rounds/%E0%A4%A', {});
    expect(a.status).toBe(400);
    const badUrl = expect.stringMatching(/not a valid url component/);
    expect(JSON.parse(a.text)).toEqual({ error: badUrl, code: 'VALIDATION_FAILED' });
    const b = await raw('GET', '/v1/rounds/%E0%A4%A', {});
    expect(b.status).toBe(400);
    expect(JSON.parse(b.text)).toEqual({ error: 'VALIDATION_FAILED', message: badUrl });
  });

  // A mangled launch link opens nothing, like any unknown token (docs/surface-b.md): the player sees the
  // 404 page (with the page's no-store and CSP headers), a feed or bets read the 404 code; never a 400
  // about the query string shown inside the operator's iframe.
  it('a repeated or over-long token: the 404 of an unknown token on every player page, nothing written', async () => {
    const before = await written(t);
    for (const path of ['/play', '/play/crash', '/play/verify', '/play/bets', '/play/feed', '/play/crash/feed']) {
      for (const query of ['token=a&token=b', `token=${'t'.repeat(300)}`]) {
        const r = await raw('GET', `${path}?${query}`, {});
        expect(r.status, `${path}?${query}`).toBe(404);
        if (['/play', '/play/crash', '/play/verify'].includes(path)) {
          expect(r.text, `${path}?${query}`).toContain('Session not found');
        } else {
          expect(JSON.parse(r.text), `${path}?${query}`).toMatchObject({ error: 'SESSION_NOT_FOUND' });
        }
      }
    }
    expect(await written(t)).toEqual(before);
  });

  it('odd query strings and cookies on the player page and dashboard never give a 5xx', async () => {
    const probes: [string, Record<string, string>][] = [
      ['/play?token=%ff', {}],
      ['/play?token=a&token=b', {}],
      ['/play/bets?token=a&token=b', {}],
      ['/play/crash?token=%00', {}],
      ['/play/crash/feed?token=' + 'x'.repeat(500), {}],
      ['/dashboard/login?next=%ff&notice=%ff', {}],
      ['/dashboard/rounds', { cookie: 'dash_session=%zz%; =; dash_session' }],
      ['/dashboard/api/stats', { cookie: `dash_session=${'a'.repeat(43)}` }],
    ];
    for (const [path, headers] of probes) {
      const r = await raw('GET', path, headers);
      expect(r.status, path).toBeLessThan(500);
    }
  });
});
