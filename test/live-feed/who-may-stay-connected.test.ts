import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STREAM_ALLOWANCE } from '../../src/games/engine/live-streams';
import { signRequest } from '../../src/signing/request-signature';
import { client, startTestApp, type TestApp, type TestOperator } from '../support/harness';

const PASSWORD = 'long enough password';
const RECHECK_MS = 200;

type Stream = Awaited<ReturnType<typeof request>>;

/** Each stream's body is read once: this resolves when the server ends it. */
const endings = new WeakMap<Stream, Promise<boolean>>();

/** Resolves true when the server ends the stream within `ms`, false if it is still open then. */
async function endsWithin(stream: Stream, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  let ended = endings.get(stream);
  if (!ended) {
    ended = stream.body.text().then(
      () => true,
      () => true,
    );
    endings.set(stream, ended);
  }
  const stillOpen = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const result = await Promise.race([ended, stillOpen]);
  clearTimeout(timer);
  return result;
}

/**
 * Open live feeds (SSE) hold a socket and a subscription for hours. Access is checked again while they
 * are open, so a sign-out, a deleted dashboard user or a disabled operator ends them; and each holder
 * has an allowance, so one captured signed GET (reads are not replay-checked) cannot open a thousand.
 */
describe('who may keep a live feed open', () => {
  let t: TestApp;
  const aborts: AbortController[] = [];
  beforeAll(async () => {
    t = await startTestApp({ engines: false, env: { LIVE_FEED_RECHECK_MS: String(RECHECK_MS) } });
  });
  afterAll(async () => {
    for (const a of aborts) a.abort();
    await t?.close();
  });

  const open = async (url: string, headers: Record<string, string> = {}): Promise<Stream> => {
    const abort = new AbortController();
    aborts.push(abort);
    return request(url, { headers, signal: abort.signal });
  };

  /** The signed headers of one GET of the Crash stream: sent again as they are, as a captured request would be. */
  const signedStreamHeaders = (op: TestOperator): Record<string, string> => {
    const path = '/api/public/v1/rounds/stream';
    const timestamp = String(Date.now());
    return {
      'x-api-key': op.apiKey,
      'x-timestamp': timestamp,
      'x-signature': signRequest(op.apiSecret, 'GET', path, timestamp, ''),
    };
  };

  async function dashboardCookie(op: TestOperator, email: string): Promise<{ cookie: string; csrf: string }> {
    await t.app.services.dashboardUsers.createUser({ operatorId: op.id, email, password: PASSWORD });
    const form = await fetch(`${t.baseUrl}/dashboard/login`);
    const pre = form.headers.getSetCookie().map((c) => c.split(';')[0]!);
    const formCsrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const res = await fetch(`${t.baseUrl}/dashboard/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: pre.join('; '), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: formCsrf, email, password: PASSWORD, next: '/dashboard/' }),
    });
    expect(res.status).toBe(303);
    const session = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0]!)
      .find((c) => c.startsWith('dash_session='))!;
    const page = await fetch(`${t.baseUrl}/dashboard/credentials`, { headers: { cookie: session } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    return { cookie: session, csrf };
  }

  it(`allows an operator ${STREAM_ALLOWANCE.operator} API streams, however they were signed`, async () => {
    const op = await t.createOperator();
    const headers = signedStreamHeaders(op);
    const url = `${t.baseUrl}/api/public/v1/rounds/stream`;
    for (let i = 0; i < STREAM_ALLOWANCE.operator; i++) {
      const res = await open(url, headers);
      expect(res.statusCode).toBe(200);
    }
    const refused = await open(url, headers);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('5');
    const tooMany = `this operator already has ${STREAM_ALLOWANCE.operator} live streams open`;
    expect(await refused.body.json()).toEqual({
      error: `${tooMany}; close one before opening another`,
      code: 'RATE_LIMITED',
    });
    // Another operator has its own allowance.
    const other = await t.createOperator();
    expect((await open(url, signedStreamHeaders(other))).statusCode).toBe(200);
  });

  it("ends an operator's open API, player and dashboard feeds when the operator is disabled", async () => {
    const op = await t.createOperator();
    const api = await open(`${t.baseUrl}/api/public/v1/rounds/stream`, signedStreamHeaders(op));
    expect(api.statusCode).toBe(200);
    const launched = await client(t.baseUrl, op, 'B')('POST', '/v1/sessions/launch', {
      player_ref: 'p1',
      currency: 'EUR',
      return_url: 'https://operator.example/lobby',
    });
    const token = new URL(launched.body.launch_url).searchParams.get('token')!;
    const player = await open(`${t.baseUrl}/play/feed?token=${token}`);
    expect(player.statusCode).toBe(200);
    const { cookie } = await dashboardCookie(op, `disable-${op.id}@example.com`);
    const dashboard = await open(`${t.baseUrl}/dashboard/feed/crash`, { cookie });
    expect(dashboard.statusCode).toBe(200);

    // Still open while the operator is enabled.
    expect(await endsWithin(api, 3 * RECHECK_MS)).toBe(false);

    await t.app.services.operators.setStatus(op.id, 'disabled');
    const ended = await Promise.all([api, player, dashboard].map((s) => endsWithin(s, 20 * RECHECK_MS)));
    expect(ended).toEqual([true, true, true]);
  });

  it('ends a dashboard feed when its session signs out, and when its user is deleted', async () => {
    const op = await t.createOperator();
    const { cookie, csrf } = await dashboardCookie(op, `out-${op.id}@example.com`);
    const feed = await open(`${t.baseUrl}/dashboard/feed/stock_race`, { cookie });
    expect(feed.statusCode).toBe(200);
    expect(await endsWithin(feed, 3 * RECHECK_MS)).toBe(false);
    const out = await fetch(`${t.baseUrl}/dashboard/logout`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf }),
    });
    expect(out.status).toBe(303);
    expect(await endsWithin(feed, 20 * RECHECK_MS)).toBe(true);

    const email = `deleted-${op.id}@example.com`;
    const second = await dashboardCookie(op, email);
    const feed2 = await open(`${t.baseUrl}/dashboard/feed/crash`, { cookie: second.cookie });
    expect(feed2.statusCode).toBe(200);
    await t.app.services.dashboardUsers.deleteUser(email);
    expect(await endsWithin(feed2, 20 * RECHECK_MS)).toBe(true);
    // And it cannot be opened again with that cookie.
    const again = await open(`${t.baseUrl}/dashboard/feed/crash`, { cookie: second.cookie });
    expect(again.statusCode).toBe(401);
  });

  it(`allows a dashboard user ${STREAM_ALLOWANCE.dashboardUser} feeds`, async () => {
    const op = await t.createOperator();
    const { cookie } = await dashboardCookie(op, `many-${op.id}@example.com`);
    for (let i = 0; i < STREAM_ALLOWANCE.dashboardUser; i++) {
      expect((await open(`${t.baseUrl}/dashboard/feed/crash`, { cookie })).statusCode).toBe(200);
    }
    const refused = await open(`${t.baseUrl}/dashboard/feed/crash`, { cookie });
    expect(refused.statusCode).toBe(429);
    await refused.body.text();
  });
});
