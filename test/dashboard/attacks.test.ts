import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { settleIdempotencyKey } from '../../src/wallet/settlements';
import { browser, csrfOf } from '../support/dashboard-browser';
import { startTestApp, type TestApp, type TestOperator } from '../support/harness';

const PASSWORD = 'long enough password';
const XSS = '<img src=x onerror=alert(1)>"\'`<script>alert(2)</script>';

async function signIn(baseUrl: string, email: string) {
  const b = browser(baseUrl);
  const form = await b.go('GET', '/dashboard/login');
  const res = await b.go('POST', '/dashboard/login', { _csrf: csrfOf(form.text), email, password: PASSWORD });
  expect(res.status).toBe(303);
  const page = await b.go('GET', '/dashboard/credentials');
  return { ...b, csrf: csrfOf(page.text) };
}

describe('dashboard attacks (PostgreSQL store)', () => {
  let t: TestApp;
  let a: TestOperator;
  let other: TestOperator;

  beforeAll(async () => {
    t = await startTestApp({ engines: false, store: 'postgres' });
    a = await t.createOperator({ name: 'Mine' });
    other = await t.createOperator({ name: 'Other' });
    const auth = t.app.services.dashboardUsers;
    await auth.createUser({ operatorId: a.id, email: 'a@example.com', password: PASSWORD });
    await auth.createUser({ operatorId: other.id, email: 'b@example.com', password: PASSWORD });
    await auth.createUser({ operatorId: a.id, email: 'gone@example.com', password: PASSWORD });
  });
  afterAll(async () => t?.close());

  it('answers a NUL character in a sign-in form with a 4xx, not a 5xx (docs/security.md)', async () => {
    const b = browser(t.baseUrl);
    const form = await b.go('GET', '/dashboard/login');
    const res = await b.go('POST', '/dashboard/login', {
      _csrf: csrfOf(form.text),
      email: 'a\u0000@example.com',
      password: PASSWORD,
    });
    expect(res.status).toBe(400);
    expect(res.text).toContain('NUL character');
  });

  it('answers a NUL character in a signed-in form with a 4xx, not a 5xx', async () => {
    const b = await signIn(t.baseUrl, 'a@example.com');
    const res = await b.go('POST', '/dashboard/webhooks', {
      _csrf: b.csrf,
      url: 'http://127.0.0.1:9/ho\u0000oks',
      events: ['round.closed\u0000'],
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  it("cannot touch another operator's endpoint, delivery or settlement by id", async () => {
    const webhooks = t.app.services.webhooks;
    const theirs = await webhooks.createEndpoint(other.id, {
      url: 'http://127.0.0.1:9/theirs',
      events: ['bet.settled'],
    });
    const delivery = await webhooks.sendTestEvent(other.id, theirs.endpoint_id);
    await t.app.db.run(`UPDATE webhook_deliveries SET status = 'dead', next_attempt_at = NULL WHERE id = ?`, [
      delivery.delivery_id,
    ]);
    const mine = await webhooks.createEndpoint(a.id, { url: 'http://127.0.0.1:9/mine', events: ['bet.settled'] });
    const b = await signIn(t.baseUrl, 'a@example.com');
    const id = theirs.endpoint_id;
    expect((await b.go('GET', `/dashboard/webhooks/${id}/log`)).status).toBe(404);
    const edit = await b.go('POST', `/dashboard/webhooks/${id}`, { _csrf: b.csrf, url: 'http://127.0.0.1:9/x' });
    expect(edit.status).toBe(404);
    expect((await b.go('POST', `/dashboard/webhooks/${id}/test`, { _csrf: b.csrf })).status).toBe(404);
    // The delivery through my own endpoint's path.
    const resend = `/dashboard/webhooks/${mine.endpoint_id}/deliveries/${delivery.delivery_id}/resend`;
    expect((await b.go('POST', resend, { _csrf: b.csrf })).status).toBe(404);
    const after = await webhooks.getEndpoint(other.id, id);
    expect(after.url).toBe('http://127.0.0.1:9/theirs');
    expect((await webhooks.listDeliveries(other.id, { endpointId: id })).length).toBe(1);

    // A pending settlement of the other operator: not listed, not retried.
    const now = t.app.services.clock.now();
    await t.app.db.transaction(async (tx) => {
      const body = {
        bet_id: 'bet_theirs',
        winner: 'NVDA',
        pct: 1,
        payout: 1,
        idempotency_key: settleIdempotencyKey('bet_theirs'),
      };
      await settlementRepository.enqueue(tx, { operatorId: other.id, body, now, firstDelayMs: 60_000 });
    });
    expect((await b.go('GET', '/dashboard/settlements')).text).not.toContain('bet_theirs');
    expect((await b.go('POST', '/dashboard/settlements/bet_theirs/retry', { _csrf: b.csrf })).status).toBe(404);
    expect((await settlementRepository.byBet(t.app.db, 'bet_theirs'))!.nextAttemptAt).toBe(now + 60_000);
  });

  it("escapes a hostile wallet's and a hostile webhook receiver's error text", async () => {
    const now = t.app.services.clock.now();
    await t.app.db.transaction(async (tx) => {
      const body = {
        bet_id: 'bet_hostile',
        winner: 'NVDA',
        pct: 1,
        payout: 1,
        idempotency_key: settleIdempotencyKey('bet_hostile'),
      };
      await settlementRepository.enqueue(tx, { operatorId: a.id, body, now, firstDelayMs: 60_000 });
      await tx.run('UPDATE wallet_settlements SET last_error = ?, last_status_code = 500 WHERE bet_id = ?', [
        XSS,
        'bet_hostile',
      ]);
    });
    const webhooks = t.app.services.webhooks;
    const ep = await webhooks.createEndpoint(a.id, { url: 'http://127.0.0.1:9/hostile', events: ['bet.settled'] });
    const d = await webhooks.sendTestEvent(a.id, ep.endpoint_id);
    await t.app.db.run(`UPDATE webhook_deliveries SET status = 'dead', next_attempt_at = NULL WHERE id = ?`, [
      d.delivery_id,
    ]);
    await t.app.db.run(
      `INSERT INTO webhook_attempts (id, delivery_id, attempt, started_at, latency_ms, status_code, error,
       response_excerpt) VALUES (?, ?, 1, ?, 5, 500, ?, ?)`,
      ['wa_hostile', d.delivery_id, now, XSS, XSS],
    );
    const b = await signIn(t.baseUrl, 'a@example.com');
    for (const path of ['/dashboard/settlements', `/dashboard/webhooks/${ep.endpoint_id}/log`]) {
      const res = await b.go('GET', path);
      expect(res.status).toBe(200);
      expect(res.text).not.toContain('<img src=x');
      expect(res.text).not.toContain('<script>alert');
    }
  });

  it('signs in from a link whose ?next holds a character a Location header cannot carry', async () => {
    // Was: the session was opened, then the 303 failed with a bare 500 (ERR_INVALID_CHAR), no cookie set.
    const b = browser(t.baseUrl);
    const next = '/dashboard/bets?player=\u2713';
    const form = await b.go('GET', `/dashboard/login?next=${encodeURIComponent(next)}`);
    expect(form.status).toBe(200);
    const res = await b.go('POST', '/dashboard/login', {
      _csrf: csrfOf(form.text),
      email: 'a@example.com',
      password: PASSWORD,
      next,
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard');
    expect(b.jar.has('dash_session')).toBe(true);
    const again = await b.go('GET', `/dashboard/login?next=${encodeURIComponent(next)}`);
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe('/dashboard');
  });

  it('refuses everything but sign-out to the users of a disabled operator', async () => {
    const b = await signIn(t.baseUrl, 'a@example.com');
    await t.app.services.operators.setStatus(a.id, 'disabled');
    try {
      expect((await b.go('GET', '/dashboard/credentials')).status).toBe(403);
      expect((await b.go('GET', '/dashboard/api/stats')).status).toBe(403);
      expect((await b.go('POST', '/dashboard/credentials/rotate', { _csrf: b.csrf, confirm: '1' })).status).toBe(403);
      expect((await b.go('POST', '/dashboard/logout', { _csrf: b.csrf })).status).toBe(303);
    } finally {
      await t.app.services.operators.setStatus(a.id, 'active');
    }
  });

  it("refuses another session's CSRF token, and a token sent in the query string", async () => {
    const mine = await signIn(t.baseUrl, 'a@example.com');
    const theirs = await signIn(t.baseUrl, 'b@example.com');
    const before = await t.app.services.operators.get(a.id);
    const forged = await mine.go('POST', '/dashboard/credentials/rotate', { _csrf: theirs.csrf, confirm: '1' });
    expect(forged.status).toBe(403);
    const inQuery = await mine.go('POST', `/dashboard/credentials/rotate?_csrf=${mine.csrf}`, { confirm: '1' });
    expect(inQuery.status).toBe(403);
    expect((await t.app.services.operators.get(a.id)).previousSecretExpiresAt).toBe(before.previousSecretExpiresAt);
  });

  it('ends the sessions of a deleted dashboard user', async () => {
    const b = await signIn(t.baseUrl, 'gone@example.com');
    await t.app.services.dashboardUsers.deleteUser('gone@example.com');
    expect((await b.go('GET', '/dashboard')).status).toBe(303);
    expect((await b.go('POST', '/dashboard/credentials/rotate', { _csrf: b.csrf, confirm: '1' })).status).toBe(401);
  });

  it('issues a fresh session id at sign-in whatever cookie the browser brought (no fixation)', async () => {
    const b = browser(t.baseUrl);
    const planted = 'A'.repeat(43);
    b.jar.set('dash_session', planted);
    const form = await b.go('GET', '/dashboard/login');
    await b.go('POST', '/dashboard/login', { _csrf: csrfOf(form.text), email: 'a@example.com', password: PASSWORD });
    expect(b.jar.get('dash_session')).not.toBe(planted);
    expect(await t.app.services.dashboardUsers.session(planted)).toBeNull();
  });

  it('answers odd form shapes with a 4xx page', async () => {
    const b = await signIn(t.baseUrl, 'a@example.com');
    const huge = await b.go('POST', '/dashboard/webhooks', {
      _csrf: b.csrf,
      url: `https://x.example/${'a'.repeat(20_000)}`,
    });
    expect(huge.status).toBe(413);
    const arrays = await b.go('POST', '/dashboard/webhooks', {
      _csrf: [b.csrf, 'x'],
      url: ['https://a.example/h', 'https://b.example/h'],
      events: ['nope', 'round.closed'],
      surface: ['B', 'A'],
    });
    expect(arrays.status).toBe(400);
    const noBody = await fetch(`${t.baseUrl}/dashboard/credentials/rotate`, {
      method: 'POST',
      headers: { cookie: `dash_session=${b.jar.get('dash_session')}`, 'x-csrf-token': b.csrf },
    });
    expect(noBody.status).toBe(400);
    const text = await fetch(`${t.baseUrl}/dashboard/credentials/rotate`, {
      method: 'POST',
      headers: { cookie: `dash_session=${b.jar.get('dash_session')}`, 'content-type': 'text/plain' },
      body: `_csrf=${b.csrf}&confirm=1`,
    });
    expect(text.status).toBe(415);
    expect((await b.go('GET', '/dashboard/bets?player=a&player=b')).status).toBe(400);
    expect((await b.go('GET', `/dashboard/compliance?player=${'p'.repeat(500)}`)).status).toBe(400);
    expect((await b.go('GET', '/dashboard/bets?status=toString')).status).toBe(400);
    expect((await b.go('GET', '/dashboard/webhooks?notice=constructor')).status).toBe(200);
    expect((await b.go('GET', `/dashboard/webhooks/${'w'.repeat(300)}`)).status).toBeLessThan(500);
    expect((await b.go('GET', '/dashboard/login?next=%2Fdashboard%2F%5C%5Cevil.example')).status).toBe(303);
  });
});

describe('dashboard sign-in throttle behind no trusted proxy', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ engines: false });
    const op = await t.createOperator();
    await t.app.services.dashboardUsers.createUser({ operatorId: op.id, email: 'c@example.com', password: PASSWORD });
  });
  afterAll(async () => t?.close());

  it('throttles an account whatever the case or spacing of its email', async () => {
    const b = browser(t.baseUrl);
    // Every answer of the sign-in form carries a fresh double-submit token.
    let csrf = csrfOf((await b.go('GET', '/dashboard/login')).text);
    const attempt = async (email: string, password: string) => {
      const res = await b.go('POST', '/dashboard/login', { _csrf: csrf, email, password });
      csrf = csrfOf(res.text);
      return res.status;
    };
    const variants = ['c@example.com', 'C@EXAMPLE.COM', ' c@Example.com ', 'C@example.COM', 'c@EXAMPLE.com'];
    for (const email of variants) expect(await attempt(email, 'wrong password!')).toBe(401);
    expect(await attempt('c@example.com', 'wrong password!')).toBe(401);
    expect(await attempt('C@Example.Com', PASSWORD)).toBe(429);
  });

  it('does not let X-Forwarded-For reset the per-address budget', async () => {
    const b = browser(t.baseUrl);
    let csrf = csrfOf((await b.go('GET', '/dashboard/login')).text);
    let last = 0;
    // 6 failures from this address so far (the test above); 21 more with a new forwarded address each.
    for (let i = 0; i < 21; i++) {
      const res = await b.go(
        'POST',
        '/dashboard/login',
        { _csrf: csrf, email: `nobody${i}@example.com`, password: 'wrong password!' },
        { 'x-forwarded-for': `203.0.113.${i}` },
      );
      csrf = csrfOf(res.text);
      last = res.status;
    }
    expect(last).toBe(429);
  });
});
