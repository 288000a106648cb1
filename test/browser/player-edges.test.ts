import type { Browser, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, startTestApp, type TestApp } from '../support/harness';
import { FAST_ROUNDS, launchBrowser, unexpectedErrors, watchedPage, type WatchedPage } from './support';

const RETURN_URL = 'https://operator.example/lobby?from=game';

/**
 * The player page at its edges, as a player and as someone holding (or stealing) a launch link:
 * a 0-decimal currency end to end, refusals that must not leave traces on the page, the session
 * ending while the page is open, the operator's text rendered inert, and the token kept to the
 * service's own origin.
 */
describe('player page edges in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let w: WatchedPage;
  let call: ReturnType<typeof client>;
  let otherOperator: ReturnType<typeof client>;

  async function launch(
    player: string,
    currency = 'EUR',
    returnUrl = RETURN_URL,
  ): Promise<{ sessionId: string; url: string; token: string }> {
    const res = await call('POST', '/v1/sessions/launch', { player_ref: player, currency, return_url: returnUrl });
    expect(res.status).toBe(200);
    const launchUrl = new URL(res.body.launch_url);
    return {
      sessionId: res.body.session_id,
      url: `${t.baseUrl}${launchUrl.pathname}${launchUrl.search}`,
      token: launchUrl.searchParams.get('token')!,
    };
  }

  /** The current round while at least `marginMs` of its betting window is left. */
  const openRound = (marginMs = 800) =>
    eventually(async () => {
      const r = await call('GET', '/v1/rounds/current');
      return r.body.status === 'open' && r.body.betting_closes_at - Date.now() > marginMs ? r.body : undefined;
    }, 15_000);

  /** Reserves `stake` on `stocks` for the session in `round`, through `via`, under a key unique to the round. */
  const reserveIn = (
    round: { round_id: string },
    sessionId: string,
    { stake, stocks, key }: { stake: number; stocks: string[]; key: string },
    via = call,
  ) =>
    via('POST', '/v1/bets/reserve', {
      session_id: sessionId,
      round_id: round.round_id,
      selected_stocks: stocks,
      stake,
      idempotency_key: `${key}-${round.round_id}`,
    });

  beforeAll(async () => {
    // The proxy header names the client's place, so a second browser can come from a second address.
    t = await startTestApp({ env: { ...FAST_ROUNDS, TRUST_PROXY_ADDRESSES: 'loopback' } });
    call = client(t.baseUrl, await t.createOperator({ name: 'Acme', settings: { currencies: ['EUR', 'JPY'] } }), 'B');
    otherOperator = client(t.baseUrl, await t.createOperator({ name: 'Other' }), 'B');
    browser = await launchBrowser();
    w = await watchedPage(browser);
  });

  afterAll(async () => {
    await w?.context.close();
    await browser?.close();
    await t?.close();
  });

  it('plays a JPY round in whole yen: refusals leave no row, the bet settles and its round verifies', async () => {
    const { page } = w;
    const { sessionId, url } = await launch('yen-player', 'JPY');
    await page.goto(url);
    await expect(page.locator('.who').textContent()).resolves.toBe('Player yen-player · JPY');
    await expect(page.locator('#bets thead').textContent()).resolves.toContain('Stake (JPY)');
    // The list is refreshed at round events: the hint promises a bet when betting closes, not at once.
    await expect(page.locator('#bets-empty').textContent()).resolves.toBe(
      "No bets in this session yet. Bets are placed on the operator's site and appear here when their round's " +
        'betting closes.',
    );

    const round = await openRound(1500);
    const reserve = (stake: number, stocks: string[], key: string) =>
      reserveIn(round, sessionId, { stake, stocks, key });
    // JPY bounds without an entry: 100 to 100000 yen, whole yen only, and one stock always left out.
    expect((await reserve(99, ['AAPL'], 'low')).body.error).toBe('STAKE_OUT_OF_RANGE');
    expect((await reserve(100_001, ['AAPL'], 'high')).body.error).toBe('STAKE_OUT_OF_RANGE');
    expect((await reserve(150.5, ['AAPL'], 'frac')).body.error).toBe('STAKE_PRECISION');
    expect((await reserve(500, round.symbols, 'all')).body.error).toBe('INVALID_SELECTION');
    const placed = await reserve(500, ['AAPL', 'NVDA'], 'ok');
    expect(placed.status).toBe(200);

    const row = page.locator(`#bets tr[data-bet="${placed.body.bet_id}"]`);
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toBe(`#${round.round_number}AAPL, NVDA500in play–`);
    const settled = await eventually(async () => {
      const b = (await call('GET', `/v1/bets/${placed.body.bet_id}`)).body;
      return b.status === 'reserved' ? undefined : b;
    }, 20_000);
    await expect
      .poll(() => row.textContent(), { timeout: 10_000 })
      .toBe(`#${round.round_number}AAPL, NVDA500${settled.status}${settled.payout}`);
    // The refused reserves never became bets.
    await expect(page.locator('#bets tbody tr').count()).resolves.toBe(1);

    // Too late for that round; the next one takes a bet again.
    const late = await reserve(500, ['AAPL'], 'late');
    expect([late.status, late.body.error]).toEqual([409, 'BETTING_CLOSED']);
    const next = await openRound();
    const again = await reserveIn(next, sessionId, { stake: 100, stocks: ['TSLA'], key: 'again' });
    expect(again.status).toBe(200);

    await page.getByRole('link', { name: 'Verify' }).click();
    await page.getByLabel('Round id').fill(round.round_id);
    await page.getByRole('button', { name: 'Verify' }).click();
    // The page recomputes the round in the browser (WebCrypto): the verdict is 'pending' until it is done,
    // which on a busy host is not at once.
    await page.locator('#verdict[data-result]:not([data-result="pending"])').waitFor({ timeout: 15_000 });
    await expect(page.locator('#verdict').getAttribute('data-result')).resolves.toBe('verified');
    expect(unexpectedErrors(w.errors)).toEqual([]);
  });

  it('keeps the token to its own origin: no third-party request, no Referer, no caching', async () => {
    const context = await browser.newContext();
    const requests: Request[] = [];
    context.on('request', (req) => requests.push(req));
    let operatorReferer: string | undefined | null = null;
    await context.route('https://operator.example/**', (route) => {
      operatorReferer = route.request().headers().referer;
      return route.fulfill({ status: 200, contentType: 'text/html', body: '<p>lobby</p>' });
    });
    const page = await context.newPage();
    const { url, token } = await launch('carol');
    for (const path of ['/play', '/play/crash', '/play/verify']) {
      const res = await page.goto(url.replace('/play?', `${path}?`));
      const headers = res!.headers();
      expect(res!.status()).toBe(200);
      expect(headers['cache-control']).toBe('no-store');
      expect(headers['referrer-policy']).toBe('no-referrer');
      expect(headers['content-security-policy']).toMatch(/default-src 'none'/);
    }
    await page.getByRole('link', { name: 'Back to the operator' }).click();
    await page.waitForURL(RETURN_URL);
    expect(operatorReferer).toBeUndefined();
    const withToken = requests.filter((r) => r.url().includes(token) || (r.headers().referer ?? '').includes(token));
    expect(withToken.filter((r) => new URL(r.url()).origin !== t.baseUrl)).toEqual([]);
    await context.close();
  });

  it("shows the operator's text as text: a player_ref of markup runs nothing", async () => {
    const { page } = w;
    const evil = `<img src=x onerror="document.title='pwned'"></script><script>document.title='pwned'</script>`;
    const { url } = await launch(evil.slice(0, 120));
    await page.goto(url);
    await expect(page.locator('.who strong').textContent()).resolves.toBe(evil.slice(0, 120));
    await expect(page.title()).resolves.toBe('Stock Race');
    await expect(page.locator('body img').count()).resolves.toBe(0);
  });

  it('says the session has ended, and keeps saying it, when it expires while the page is open', async () => {
    const { page } = w;
    const { sessionId, url } = await launch('dora');
    await openRound(2000);
    await t.app.db.run('UPDATE sessions SET expires_at = ? WHERE id = ?', [Date.now() + 1200, sessionId]);
    await page.goto(url);
    await page.locator('#phase', { hasText: /Betting closes in \d+ s/ }).waitFor();
    const ended = 'This game session has ended. Go back to the operator to start a new one.';
    await page.locator('#phase', { hasText: ended }).waitFor({ timeout: 10_000 });
    // The countdown of the round still open (it ticks every 250 ms) must not write over it.
    await page.waitForTimeout(800);
    await expect(page.locator('#phase').textContent()).resolves.toBe(ended);
    await expect(page.getByRole('link', { name: 'Back to the operator' }).getAttribute('href')).resolves.toBe(
      RETURN_URL,
    );
  });

  it('flags a token used from a second place, and opens nothing for another operator', async () => {
    const { sessionId, url } = await launch('erin');
    const first = await browser.newContext({ extraHTTPHeaders: { 'x-forwarded-for': '198.51.100.10' } });
    const second = await browser.newContext({ extraHTTPHeaders: { 'x-forwarded-for': '203.0.113.20' } });
    expect((await (await first.newPage()).goto(url))?.status()).toBe(200);
    expect((await (await second.newPage()).goto(url))?.status()).toBe(200);
    const flag = await eventually(async () => {
      const res = await call('GET', '/v1/compliance/flags?rule=session_multi_place');
      return (res.body.data ?? res.body.flags ?? []).find((f: { session_id: string }) => f.session_id === sessionId);
    });
    expect(flag.player).toBe('erin');
    await first.close();
    await second.close();

    const round = await openRound(300);
    const foreign = await reserveIn(round, sessionId, { stake: 5, stocks: ['AAPL'], key: 'foreign' }, otherOperator);
    expect([foreign.status, foreign.body.error]).toEqual([404, 'SESSION_NOT_FOUND']);
  });
});
