import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settlementCommands } from '../../src/cli/commands/settlements';
import { webhookCommands } from '../../src/cli/commands/webhook';
import { isDomainError } from '../../src/errors/codes';
import { SURFACE_B_STATUS } from '../../src/http/error-maps';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { settleIdempotencyKey } from '../../src/wallet/settlements';
import { browser, csrfOf } from '../support/dashboard-browser';
import { startTestApp, type TestApp, type TestOperator } from '../support/harness';

const PASSWORD = 'long enough password';

async function signIn(baseUrl: string, email: string) {
  const b = browser(baseUrl);
  const form = await b.go('GET', '/dashboard/login');
  const res = await b.go('POST', '/dashboard/login', {
    _csrf: csrfOf(form.text),
    email,
    password: PASSWORD,
    next: '/dashboard/credentials',
  });
  expect(res.status).toBe(303);
  expect(res.headers.get('location')).toBe('/dashboard/credentials');
  const page = await b.go('GET', '/dashboard/credentials');
  return { ...b, csrf: csrfOf(page.text) };
}

describe('dashboard over HTTP: sessions, CSRF, scoping, escaping', () => {
  let t: TestApp;
  let a: TestOperator;
  let other: TestOperator;

  beforeAll(async () => {
    t = await startTestApp({ engines: false });
    a = await t.createOperator({ name: '<script>alert("op")</script>' });
    other = await t.createOperator({ name: 'Other' });
    const auth = t.app.services.dashboardUsers;
    await auth.createUser({ operatorId: a.id, email: 'a@example.com', password: PASSWORD });
    await auth.createUser({ operatorId: other.id, email: 'b@example.com', password: PASSWORD });
  });
  afterAll(async () => t?.close());

  it('sends a signed-out visitor to the sign-in page, and refuses a sign-in form without its token', async () => {
    const b = browser(t.baseUrl);
    const res = await b.go('GET', '/dashboard/bets?player=x');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/login?next=%2Fdashboard%2Fbets%3Fplayer%3Dx');
    expect((await b.go('GET', '/dashboard/api/stats')).status).toBe(401);
    expect((await b.go('GET', '/dashboard/feed/crash')).status).toBe(401);
    const forged = await b.go('POST', '/dashboard/login', {
      _csrf: 'x'.repeat(32),
      email: 'a@example.com',
      password: PASSWORD,
    });
    expect(forged.status).toBe(403);
    expect(b.jar.has('dash_session')).toBe(false);
    // An open redirect is not possible through ?next.
    const form = await b.go('GET', '/dashboard/login');
    const off = await b.go('POST', '/dashboard/login', {
      _csrf: csrfOf(form.text),
      email: 'a@example.com',
      password: PASSWORD,
      next: '//evil.example/x',
    });
    expect(off.headers.get('location')).toBe('/dashboard');
  });

  it('sets an HttpOnly, SameSite=Strict session cookie scoped to /dashboard, and security headers', async () => {
    const b = await signIn(t.baseUrl, 'a@example.com');
    const cookie = b.cookies.find((c) => c.startsWith('dash_session='))!;
    expect(cookie).toMatch(/; Path=\/dashboard; Expires=[^;]+; HttpOnly; SameSite=Strict$/);
    expect(cookie).not.toContain('Secure');
    const page = await b.go('GET', '/dashboard');
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('cache-control')).toBe('no-store');
    // The operator's name is shown escaped.
    expect(page.text).toContain('<strong>&lt;script&gt;alert(&quot;op&quot;)&lt;/script&gt;</strong>');
    expect(page.text).not.toContain('<script>alert');
  });

  it("refuses every state change without the session's CSRF token", async () => {
    const b = await signIn(t.baseUrl, 'a@example.com');
    const form = { url: 'http://127.0.0.1:9/hooks', events: ['round.closed'] };
    expect((await b.go('POST', '/dashboard/webhooks', form)).status).toBe(403);
    expect((await b.go('POST', '/dashboard/webhooks', { ...form, _csrf: 'A'.repeat(43) })).status).toBe(403);
    expect((await b.go('POST', '/dashboard/credentials/rotate', { confirm: '1' })).status).toBe(403);
    expect((await b.go('POST', '/dashboard/logout', {})).status).toBe(403);
    expect(await t.app.services.webhooks.listEndpoints(a.id)).toEqual([]);

    const created = await b.go('POST', '/dashboard/webhooks', { ...form, _csrf: b.csrf });
    expect(created.status).toBe(200);
    expect(created.text).toContain('will not be shown again');
    const endpoints = await t.app.services.webhooks.listEndpoints(a.id);
    expect(endpoints.map((e) => [e.url, e.events])).toEqual([['http://127.0.0.1:9/hooks', ['round.closed']]]);
    // The secret shown is the one deliveries are signed with.
    const secret = /id="secret" class="mono" readonly value="([^"]+)"/.exec(created.text)![1]!;
    const row = await t.app.services.webhooks.endpoints.row(a.id, endpoints[0]!.endpoint_id);
    expect(t.app.services.webhooks.endpoints.signingSecrets(row, Date.now())).toEqual([secret]);
  });

  it('shows a validation error on the form, keeping what was typed', async () => {
    const b = await signIn(t.baseUrl, 'a@example.com');
    const res = await b.go('POST', '/dashboard/webhooks', {
      _csrf: b.csrf,
      url: 'ftp://example.com/<x>',
      events: ['round.closed'],
    });
    expect(res.status).toBe(400);
    expect(res.text).toContain('role="alert"');
    expect(res.text).toContain('value="ftp://example.com/&lt;x&gt;"');
  });

  it('keeps each operator to its own endpoints and bets', async () => {
    const mine = await t.app.services.webhooks.createEndpoint(other.id, {
      url: 'http://127.0.0.1:9/other',
      events: ['bet.settled'],
    });
    const b = await signIn(t.baseUrl, 'a@example.com');
    expect((await b.go('GET', `/dashboard/webhooks/${mine.endpoint_id}`)).status).toBe(404);
    expect((await b.go('POST', `/dashboard/webhooks/${mine.endpoint_id}/delete`, { _csrf: b.csrf })).status).toBe(404);
    expect((await b.go('POST', `/dashboard/webhooks/${mine.endpoint_id}/rotate`, { _csrf: b.csrf })).status).toBe(404);
    expect((await t.app.services.webhooks.listEndpoints(other.id)).length).toBe(1);
    expect((await b.go('GET', '/dashboard/webhooks')).text).not.toContain('/other');
    expect((await b.go('GET', '/dashboard/bets/bet_of_someone_else')).status).toBe(404);
    expect((await b.go('POST', '/dashboard/settlements/bet_of_someone_else/retry', { _csrf: b.csrf })).status).toBe(
      404,
    );
  });

  it('retries a wallet settlement by the same rule as the admin CLI: a confirmed one is refused by both', async () => {
    const db = t.app.db;
    const now = t.app.services.clock.now();
    const settlement = async (betId: string, status: 'pending' | 'delivered') => {
      await db.transaction(async (tx) => {
        const key = settleIdempotencyKey(betId);
        const body = { bet_id: betId, winner: 'NVDA', pct: 8.85, payout: 19, idempotency_key: key };
        await settlementRepository.enqueue(tx, { operatorId: a.id, body, now, firstDelayMs: 60_000 });
        if (status === 'delivered') {
          await tx.run(
            `UPDATE wallet_settlements SET status = 'delivered', attempts = 1, next_attempt_at = NULL, delivered_at = ?
             WHERE bet_id = ?`,
            [now, betId],
          );
        }
      });
    };
    const cliRetry = settlementCommands.find((c) => c.path.join(' ') === 'settlements retry')!;
    const cliRefusal = (betId: string) =>
      cliRetry.run(t.app, { bet: betId }).then(
        () => null,
        (e: unknown) => (isDomainError(e) ? e.code : 'not a domain error'),
      );
    const b = await signIn(t.baseUrl, 'a@example.com');
    const dashboardRetry = (betId: string) => b.go('POST', `/dashboard/settlements/${betId}/retry`, { _csrf: b.csrf });

    // Confirmed by the wallet: the CLI used to re-send it while the dashboard refused it.
    await settlement('bet_confirmed', 'delivered');
    expect(await cliRefusal('bet_confirmed')).toBe('ILLEGAL_TRANSITION');
    const refused = await dashboardRetry('bet_confirmed');
    expect(refused.status).toBe(SURFACE_B_STATUS.ILLEGAL_TRANSITION);
    expect(refused.text).toContain('already confirmed');
    const unchanged = await settlementRepository.byBet(db, 'bet_confirmed');
    expect(unchanged).toMatchObject({ status: 'delivered', deliveredAt: now });
    // Sent again only when the CLI asks for a re-send explicitly, with the same idempotency_key.
    const resent = (await cliRetry.run(t.app, { bet: 'bet_confirmed', resend: true })) as Record<string, unknown>;
    expect(resent).toMatchObject({ status: 'pending', idempotency_key: 'settle_bet_confirmed' });

    // Pending: due now, from either.
    await settlement('bet_waiting', 'pending');
    await settlement('bet_waiting_too', 'pending');
    expect((await dashboardRetry('bet_waiting')).status).toBe(303);
    expect(await cliRefusal('bet_waiting_too')).toBeNull();
    for (const id of ['bet_waiting', 'bet_waiting_too']) {
      // Enqueued a minute ahead; due now after the retry.
      const due = await settlementRepository.byBet(db, id);
      expect(due!.status).toBe('pending');
      expect(due!.nextAttemptAt).toBeLessThanOrEqual(t.app.services.clock.now());
    }

    // Unknown: the same code from both.
    expect(await cliRefusal('bet_nobody')).toBe('NOT_FOUND');
    expect((await dashboardRetry('bet_nobody')).status).toBe(SURFACE_B_STATUS.NOT_FOUND);
  });

  it('re-sends a webhook delivery by the same rule as the admin CLI: a pending one is refused by both', async () => {
    const webhooks = t.app.services.webhooks;
    const endpoint = await webhooks.createEndpoint(a.id, { url: 'http://127.0.0.1:9/hooks', events: ['bet.settled'] });
    // No dispatcher runs in this app: the test delivery stays pending.
    const pending = await webhooks.sendTestEvent(a.id, endpoint.endpoint_id);
    const cliResend = webhookCommands.find((c) => c.path.join(' ') === 'webhook resend')!;
    const cliCode = await cliResend.run(t.app, { delivery: pending.delivery_id }).then(
      () => null,
      (e: unknown) => (isDomainError(e) ? e.code : 'not a domain error'),
    );
    expect(cliCode).toBe('ILLEGAL_TRANSITION');
    const b = await signIn(t.baseUrl, 'a@example.com');
    const path = `/dashboard/webhooks/${endpoint.endpoint_id}/deliveries/${pending.delivery_id}/resend`;
    expect((await b.go('POST', path, { _csrf: b.csrf })).status).toBe(SURFACE_B_STATUS.ILLEGAL_TRANSITION);
    expect((await webhooks.listDeliveries(a.id, { endpointId: endpoint.endpoint_id })).length).toBe(1);
  });

  it('ends the session on sign-out, on the server too', async () => {
    const b = await signIn(t.baseUrl, 'a@example.com');
    const stolen = b.jar.get('dash_session')!;
    const out = await b.go('POST', '/dashboard/logout', { _csrf: b.csrf });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/dashboard/login?signed_out=1');
    const replay = await fetch(`${t.baseUrl}/dashboard`, {
      redirect: 'manual',
      headers: { cookie: `dash_session=${stolen}` },
    });
    expect(replay.status).toBe(303);
  });

  it('streams the live feed to a signed-in user', async () => {
    const b = await signIn(t.baseUrl, 'a@example.com');
    const controller = new AbortController();
    const res = await fetch(`${t.baseUrl}/dashboard/feed/stock_race`, {
      headers: { cookie: `dash_session=${b.jar.get('dash_session')}` },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    controller.abort();
    expect((await b.go('GET', '/dashboard/feed/poker')).status).toBe(404);
  });
});

describe('dashboard cookie outside development and test', () => {
  it('is Secure', async () => {
    const env = {
      APP_ENV: 'production',
      TRUST_PROXY_TLS: 'true',
      TRUST_PROXY_HOPS: '1',
      METRICS_TOKEN: 'm'.repeat(32),
    };
    const t = await startTestApp({ engines: false, env });
    try {
      const op = await t.createOperator();
      await t.app.services.dashboardUsers.createUser({ operatorId: op.id, email: 'p@example.com', password: PASSWORD });
      const login = browser(t.baseUrl);
      const form = await login.go('GET', '/dashboard/login');
      expect(login.cookies[0]).toMatch(/; Secure; SameSite=Strict$/);
      const res = await login.go('POST', '/dashboard/login', {
        _csrf: csrfOf(form.text),
        email: 'p@example.com',
        password: PASSWORD,
      });
      expect(res.status).toBe(303);
      expect(login.cookies.find((c) => c.startsWith('dash_session='))).toMatch(/; HttpOnly; Secure; SameSite=Strict$/);
    } finally {
      await t.close();
    }
  });
});
