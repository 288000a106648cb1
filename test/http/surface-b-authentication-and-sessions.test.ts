import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { hashToken } from '../../src/sessions/session-service';
import { client, startTestApp, STORES, type TestApp, type TestOperator } from '../support/harness';

const TTL = 600_000;

describe.each(STORES)('Surface B authentication, sessions and the player page on %s', (store) => {
  let t: TestApp;
  let op: TestOperator;
  let call: ReturnType<typeof client>;
  const clock = new FakeClock(Date.now());

  beforeAll(async () => {
    t = await startTestApp({ store, clock, engines: false, env: { SESSION_TTL_MS: String(TTL) } });
    op = await t.createOperator();
    call = client(t.baseUrl, op, 'B');
  });
  afterAll(async () => t?.close());

  // A signed request is accepted once, and the clock stands still here: each launch is signed at a
  // millisecond of its own, as a real client's would be.
  let launches = 0;
  const launch = (body: Record<string, unknown>) =>
    call('POST', '/v1/sessions/launch', body, { timestamp: clock.now() + ++launches });
  const good = { player_ref: 'player-42', currency: 'EUR', return_url: 'https://operator.example/lobby?x=1' };

  describe('authentication', () => {
    it('refuses a request without X-Operator-Key: 401 MISSING_CREDENTIALS', async () => {
      const res = await request(`${t.baseUrl}/v1/rounds/current`);
      expect(res.statusCode).toBe(401);
      expect(await res.body.json()).toEqual({
        error: 'MISSING_CREDENTIALS',
        message: 'the x-operator-key header is missing',
      });
    });

    it('refuses an unknown key: 401 UNKNOWN_API_KEY', async () => {
      const res = await client(t.baseUrl, { ...op, apiKey: 'pk_nobody' }, 'B')('GET', '/v1/rounds/current', undefined, {
        timestamp: clock.now(),
      });
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('UNKNOWN_API_KEY');
    });

    it('refuses a signature made with another secret: 401 INVALID_SIGNATURE with {error, message}', async () => {
      const res = await call('POST', '/v1/sessions/launch', good, { timestamp: clock.now(), secret: 'sk_wrong' });
      expect(res.status).toBe(401);
      expect(Object.keys(res.body).sort()).toEqual(['error', 'message']);
      expect(res.body.error).toBe('INVALID_SIGNATURE');
    });

    it('refuses a body changed after signing: 401 INVALID_SIGNATURE', async () => {
      const ts = String(clock.now());
      const { signRequest } = await import('../../src/signing/request-signature');
      const signed = JSON.stringify(good);
      const res = await request(`${t.baseUrl}/v1/sessions/launch`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'X-Operator-Key': op.apiKey,
          'X-Timestamp': ts,
          'X-Signature': signRequest(op.apiSecret, 'POST', '/v1/sessions/launch', ts, signed),
        },
        body: JSON.stringify({ ...good, player_ref: 'someone-else' }),
      });
      expect(res.statusCode).toBe(401);
      expect((await res.body.json()) as object).toMatchObject({ error: 'INVALID_SIGNATURE' });
    });

    it('refuses a timestamp more than 5 minutes old: 401 STALE_TIMESTAMP', async () => {
      const res = await call('GET', '/v1/rounds/current', undefined, { timestamp: clock.now() - 300_001 });
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('STALE_TIMESTAMP');
    });

    it('answers a server fault with 500 {error: INTERNAL, trace_id} and nothing else', async () => {
      const spy = vi
        .spyOn(t.app.services.sessions, 'launch')
        .mockRejectedValueOnce(new Error('database exploded at 10.0.0.7'));
      const res = await launch(good);
      spy.mockRestore();
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'INTERNAL', trace_id: res.headers['x-request-id'] });
    });

    it('answers an unknown route with 404 NOT_FOUND in the Surface B shape', async () => {
      const res = await call('GET', '/v1/nope', undefined, { timestamp: clock.now() });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('NOT_FOUND');
    });
  });

  describe('POST /v1/sessions/launch', () => {
    it('creates a session: launch_url on the player page with a token whose hash alone is stored', async () => {
      const res = await launch(good);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'launch_url', 'session_id']);
      expect(res.body.expires_at).toBe(clock.now() + TTL);
      const url = new URL(res.body.launch_url);
      expect(`${url.origin}${url.pathname}`).toBe(`${t.config.publicBaseUrl}/play`);
      const token = url.searchParams.get('token')!;
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const row = await t.app.db.get<{ token_hash: string; player_ref: string; return_url: string }>(
        'SELECT token_hash, player_ref, return_url FROM sessions WHERE id = ?',
        [res.body.session_id],
      );
      expect(row).toEqual({
        token_hash: hashToken(token),
        player_ref: 'player-42',
        return_url: 'https://operator.example/lobby?x=1',
      });
    });

    it.each([
      ['a currency the operator does not allow', { currency: 'JPY' }, 400, 'CURRENCY_NOT_ALLOWED'],
      ['a code that is not ISO 4217', { currency: 'XQZ' }, 400, 'CURRENCY_NOT_ALLOWED'],
      ['a lowercase code', { currency: 'eur' }, 400, 'VALIDATION_FAILED'],
      ['a plain-http return_url', { return_url: 'http://operator.example/lobby' }, 400, 'INVALID_URL'],
      ['a relative return_url', { return_url: '/lobby' }, 400, 'INVALID_URL'],
      ['a non-web return_url', { return_url: 'javascript:alert(1)' }, 400, 'INVALID_URL'],
      ['an unknown field', { bonus: true }, 400, 'UNKNOWN_FIELD'],
      ['an empty player_ref', { player_ref: '' }, 400, 'VALIDATION_FAILED'],
      ['a player_ref of 121 characters', { player_ref: 'x'.repeat(121) }, 400, 'VALIDATION_FAILED'],
    ])('refuses %s', async (_what, change, status, code) => {
      const res = await launch({ ...good, ...change });
      expect(res.status).toBe(status);
      expect(res.body.error).toBe(code);
      expect(typeof res.body.message).toBe('string');
    });

    it('says an ISO 4217 code that is not a currency (gold) is refused as such, not as unknown to ISO', async () => {
      const res = await launch({ ...good, currency: 'XAU' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: 'CURRENCY_NOT_ALLOWED',
        message: 'XAU is not a currency in circulation (an ISO 4217 code other than funds, metals and testing codes)',
      });
    });

    it.each([
      [
        'a repeated key',
        '{"player_ref":"a","player_ref":"b","currency":"EUR","return_url":"https://o.example/"}',
        'application/json',
        400,
        'DUPLICATE_JSON_KEY',
      ],
      ['broken JSON', '{"player_ref":', 'application/json', 400, 'MALFORMED_JSON'],
      ['a non-JSON body', 'player_ref=a', 'text/plain', 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ])('refuses %s in the body, signed or not', async (_what, raw, type, status, code) => {
      const res = await call('POST', '/v1/sessions/launch', undefined, {
        rawBody: raw,
        timestamp: clock.now(),
        headers: { 'content-type': type },
      });
      expect([res.status, res.body.error]).toEqual([status, code]);
    });

    it('names the missing field', async () => {
      const res = await launch({ player_ref: 'p', currency: 'EUR' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'VALIDATION_FAILED', message: 'field "return_url" is required' });
    });

    it('accepts http on a loopback host outside production', async () => {
      const res = await launch({ ...good, return_url: 'http://127.0.0.1:8080/back' });
      expect(res.status).toBe(200);
    });
  });

  describe('the player page', () => {
    const tokenOf = (launchUrl: string) => new URL(launchUrl).searchParams.get('token')!;

    it('opens for a live token, escaping what the operator sent', async () => {
      const res0 = await launch({ ...good, player_ref: '<b>eve</b>' });
      const res = await request(`${t.baseUrl}/play?token=${tokenOf(res0.body.launch_url)}`);
      const html = await res.body.text();
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(html).toContain('&lt;b&gt;eve&lt;/b&gt;');
      expect(html).not.toContain('<b>eve</b>');
      expect(html).toContain(`/play/feed?token=${tokenOf(res0.body.launch_url)}`);
    });

    it('refuses an unknown or malformed token with 404', async () => {
      for (const q of ['?token=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '?token=short', '']) {
        const res = await request(`${t.baseUrl}/play${q}`);
        await res.body.text();
        expect(res.statusCode).toBe(404);
      }
    });

    it('refuses an expired session with 410, and its feed with 409 SESSION_EXPIRED', async () => {
      const res0 = await launch(good);
      await t.app.db.run('UPDATE sessions SET expires_at = ? WHERE id = ?', [clock.now(), res0.body.session_id]);
      const page = await request(`${t.baseUrl}/play?token=${tokenOf(res0.body.launch_url)}`);
      expect(page.statusCode).toBe(410);
      expect(await page.body.text()).toContain('Session expired');
      const feed = await request(`${t.baseUrl}/play/feed?token=${tokenOf(res0.body.launch_url)}`);
      expect(feed.statusCode).toBe(409);
      expect(((await feed.body.json()) as { error: string }).error).toBe('SESSION_EXPIRED');
    });

    it('streams the Stock Race feed to a live token', async () => {
      const res0 = await launch(good);
      const controller = new AbortController();
      const res = await request(`${t.baseUrl}/play/feed?token=${tokenOf(res0.body.launch_url)}`, {
        signal: controller.signal,
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      controller.abort();
      await res.body.text().catch(() => undefined);
    });
  });
});
