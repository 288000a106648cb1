import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browser, csrfOf } from '../support/dashboard-browser';
import { startTestApp, type TestApp, type TestOperator } from '../support/harness';

/**
 * Partner dashboard edges seen from a browser: where the session cookie goes at sign-in, the
 * delivery log's periodic refresh once the session is gone, the login form's token cookie, and a
 * sandbox bet's audit trail.
 */
const PASSWORD = 'long enough password';

async function signIn(baseUrl: string, email: string, b = browser(baseUrl)) {
  const form = await b.go('GET', '/dashboard/login');
  const res = await b.go('POST', '/dashboard/login', { _csrf: csrfOf(form.text), email, password: PASSWORD });
  expect(res.status).toBe(303);
  const page = await b.go('GET', '/dashboard/credentials');
  return { ...b, csrf: csrfOf(page.text) };
}

describe('partner dashboard edges', () => {
  let t: TestApp;
  let live: TestOperator;
  let sandbox: TestOperator;

  beforeAll(async () => {
    t = await startTestApp({ engines: false });
    live = await t.createOperator({ name: 'Live casino' });
    sandbox = await t.createOperator({ name: 'Casino (test)', mode: 'test' });
    const auth = t.app.services.dashboardUsers;
    await auth.createUser({ operatorId: live.id, email: 'live@example.com', password: PASSWORD });
    await auth.createUser({ operatorId: live.id, email: 'colleague@example.com', password: PASSWORD });
    await auth.createUser({ operatorId: sandbox.id, email: 'test@example.com', password: PASSWORD });
  });
  afterAll(async () => t?.close());

  it('ends the session the browser brought when it signs in again (the old id no longer opens anything)', async () => {
    // Two tabs: the second one's sign-in form is posted while the first session is still live.
    const b = await signIn(t.baseUrl, 'live@example.com');
    const first = b.jar.get('dash_session')!;
    expect(await t.app.services.dashboardUsers.session(first)).not.toBeNull();
    const form = await b.go('GET', '/dashboard/login?next=/dashboard/rounds');
    expect(form.status).toBe(303); // signed in: the form is skipped
    const other = browser(t.baseUrl);
    const stale = await other.go('GET', '/dashboard/login');
    b.jar.set('dash_login', other.jar.get('dash_login')!);
    const res = await b.go('POST', '/dashboard/login', {
      _csrf: csrfOf(stale.text),
      email: 'colleague@example.com',
      password: PASSWORD,
    });
    expect(res.status).toBe(303);
    const second = b.jar.get('dash_session')!;
    expect(second).not.toBe(first);
    // Was: the replaced session stayed valid for its full 8 hours on the server.
    expect(await t.app.services.dashboardUsers.session(first)).toBeNull();
    const replay = await fetch(`${t.baseUrl}/dashboard/credentials`, {
      redirect: 'manual',
      headers: { cookie: `dash_session=${first}` },
    });
    expect(replay.status).toBe(303);
    expect(replay.headers.get('location')).toMatch(/^\/dashboard\/login\?next=/);
  });

  it('gives the sign-in form a short-lived token cookie (docs/dashboard.md), not a browser-lifetime one', async () => {
    const b = browser(t.baseUrl);
    await b.go('GET', '/dashboard/login');
    const cookie = b.cookies.find((c) => c.startsWith('dash_login='))!;
    const maxAge = /; Max-Age=(\d+)/.exec(cookie);
    // Was: no Max-Age and no Expires, so the token lived as long as the browser session (days, restored).
    expect(maxAge).not.toBeNull();
    expect(Number(maxAge![1])).toBeGreaterThan(0);
    expect(Number(maxAge![1])).toBeLessThanOrEqual(3600);
    expect(cookie).toMatch(/; Path=\/dashboard\/login; /);
    expect(cookie).toMatch(/; HttpOnly; SameSite=Strict$/);
  });

  it("answers the delivery log's refresh with 401 once signed out, never with a sign-in page to paste in", async () => {
    const endpoint = await t.app.services.webhooks.createEndpoint(live.id, {
      url: 'http://127.0.0.1:9/hooks',
      events: ['bet.settled'],
    });
    const b = await signIn(t.baseUrl, 'live@example.com');
    const log = `/dashboard/webhooks/${endpoint.endpoint_id}/log`;
    const page = await b.go('GET', `/dashboard/webhooks/${endpoint.endpoint_id}`);
    expect(page.text).toContain(`data-refresh="${log}"`);
    expect((await b.go('GET', log)).status).toBe(200);
    // Signed out in another tab: the page keeps polling its log every 2 s.
    expect((await b.go('POST', '/dashboard/logout', { _csrf: b.csrf })).status).toBe(303);
    const res = await fetch(`${t.baseUrl}${log}`, {
      headers: { cookie: `dash_session=${b.jar.get('dash_session') ?? ''}` },
    });
    // Was: a 303 to /dashboard/login, which fetch follows to a 200 sign-in page that forms.js put
    // inside the delivery log box (and whose ?next led back to the bare log fragment).
    expect(res.status).toBe(401);
    expect(await res.text()).not.toContain('<form');
    // A whole page still sends a signed-out visitor to the sign-in form.
    const whole = await b.go('GET', `/dashboard/webhooks/${endpoint.endpoint_id}`);
    expect(whole.status).toBe(303);
  });

  it("shows a sandbox bet's round as a sandbox round, without a Verify link the public record refuses", async () => {
    const now = t.app.services.clock.now();
    const roundId = 'rnd_sandbox_edge_1';
    await t.app.db.run(
      `INSERT INTO rounds (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at,
         betting_closes_at, running_at, ends_at, closed_at, outcome, settings, operator_id, scripted)
       VALUES (?, 'crash', 1, 'closed', 'h', 's', 'c', 1, ?, ?, ?, ?, ?, ?, '{}', ?, 1)`,
      [
        roundId,
        now - 9000,
        now - 8000,
        now - 8000,
        now - 5000,
        now - 5000,
        JSON.stringify({ crash_point: 200 }),
        sandbox.id,
      ],
    );
    await t.app.db.run(
      `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, amount, status, payout,
         placed_at, settled_at)
       VALUES ('bet_sandbox_edge_1', ?, 'crash', ?, 1, 'p1', 100, 'lost', 0, ?, ?)`,
      [sandbox.id, roundId, now - 8500, now - 5000],
    );
    // The public fairness record does not hold sandbox rounds.
    expect((await fetch(`${t.baseUrl}/fairness/rounds/${roundId}`)).status).toBe(404);
    const b = await signIn(t.baseUrl, 'test@example.com');
    const rounds = await b.go('GET', '/dashboard/rounds');
    expect(rounds.text).toContain('scripted outcome');
    expect(rounds.text).not.toContain(`/fairness/rounds/${roundId}`);
    const page = await b.go('GET', '/dashboard/bets/bet_sandbox_edge_1');
    expect(page.status).toBe(200);
    expect(page.text).toContain('crashed at 2.00x');
    // Was: "(verify)" linked to /fairness/rounds/<sandbox round>, a 404.
    expect(page.text).not.toContain(`/fairness/rounds/${roundId}`);
    expect(page.text).toContain('scripted outcome');
  });
});
