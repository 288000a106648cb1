import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, startTestApp, withSeeds, type TestApp } from '../support/harness';
import {
  FAST_ROUNDS,
  horizontalOverflow,
  launchBrowser,
  offscreen,
  screenshot,
  shortCrashSeeds,
  unexpectedErrors,
  watchedPage,
  type WatchedPage,
} from './support';

const RETURN_URL = 'https://operator.example/lobby?from=game';
const PHONE = { width: 390, height: 844 };

describe('player page in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let w: WatchedPage;
  let call: ReturnType<typeof client>;

  /** A session launched through the signed Surface B API, as an operator would; the page URL on this test server. */
  async function launch(player: string): Promise<{ sessionId: string; url: string }> {
    const res = await call('POST', '/v1/sessions/launch', {
      player_ref: player,
      currency: 'EUR',
      return_url: RETURN_URL,
    });
    expect(res.status).toBe(200);
    const launchUrl = new URL(res.body.launch_url);
    expect(launchUrl.pathname).toBe('/play');
    // The configured public base URL names port 0 in tests; the path and token are what matter.
    return { sessionId: res.body.session_id, url: `${t.baseUrl}${launchUrl.pathname}${launchUrl.search}` };
  }

  beforeAll(async () => {
    t = await startTestApp({ env: FAST_ROUNDS, beforeStart: withSeeds('crash', shortCrashSeeds(150, 130, 180)) });
    call = client(t.baseUrl, await t.createOperator({ name: 'Acme Gaming' }), 'B');
    browser = await launchBrowser();
    w = await watchedPage(browser, PHONE);
  });

  afterAll(async () => {
    await w?.context.close();
    await browser?.close();
    await t?.close();
  });

  it("opens with a launch token and follows a round to its result, with the player's bet settled", async () => {
    const { page } = w;
    const { sessionId, url } = await launch('alice');
    await page.goto(url);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Stock Race');
    await expect(page.locator('.who').textContent()).resolves.toBe('Player alice · EUR');
    await expect(page.getByRole('link', { name: 'Back to the operator' }).getAttribute('href')).resolves.toBe(
      RETURN_URL,
    );

    // The countdown of a betting window, then a bet reserved by the operator in that round.
    await page.locator('#phase', { hasText: /Betting closes in \d+ s/ }).waitFor({ timeout: 15_000 });
    const current = await eventually(async () => {
      const r = await call('GET', '/v1/rounds/current');
      return r.body.status === 'open' && r.body.betting_closes_at - Date.now() > 500 ? r.body : undefined;
    }, 15_000);
    const picks = ['AAPL', 'NVDA'];
    const reserved = await call('POST', '/v1/bets/reserve', {
      session_id: sessionId,
      round_id: current.round_id,
      selected_stocks: picks,
      stake: 2.5,
      idempotency_key: `bet-${current.round_id}`,
    });
    expect(reserved.status).toBe(200);
    const betRow = page.locator(`#bets tr[data-bet="${reserved.body.bet_id}"]`);
    await betRow.waitFor();
    await expect(betRow.textContent()).resolves.toBe(`#${current.round_number}AAPL, NVDA2.50in play–`);

    // The race, mid-way: the board moves.
    await page.locator('#phase', { hasText: 'Racing' }).waitFor({ timeout: 15_000 });
    await expect
      .poll(async () => Number(await page.locator('#progress').getAttribute('value')), { timeout: 10_000 })
      .toBeGreaterThan(450);
    await expect.poll(() => page.locator('#board li.up, #board li.down').count()).toBeGreaterThan(0);
    await screenshot(page, 'player-mid-race');

    // The result: the winner and its move as the round closed them, and the bet settled accordingly.
    await page.locator('#phase', { hasText: 'Winner:' }).waitFor({ timeout: 15_000 });
    const round = (await call('GET', `/v1/rounds/${current.round_id}`)).body;
    const { winner, pct } = round.outcome as { winner: string; pct: number };
    await expect(page.locator('#phase').textContent()).resolves.toBe(
      `Winner: ${winner} ${pct > 0 ? '+' : ''}${pct.toFixed(2)}%`,
    );
    await expect(page.locator('#board li.winner').getAttribute('data-symbol')).resolves.toBe(winner);
    await expect(page.locator('#board li').first().getAttribute('data-symbol')).resolves.toBe(winner);
    const bet = await eventually(async () => {
      const b = (await call('GET', `/v1/bets/${reserved.body.bet_id}`)).body;
      return b.status === 'reserved' ? undefined : b;
    });
    expect(bet.status).toBe(picks.includes(winner) ? 'won' : 'lost');
    await expect
      .poll(() => betRow.textContent())
      .toBe(`#${current.round_number}AAPL, NVDA2.50${bet.status}${(bet.payout as number).toFixed(2)}`);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    // At 390 px every column of the bets table, Payout included, is on screen without scrolling.
    expect(await offscreen(page, 'body *')).toEqual([]);
    await screenshot(page, 'player-resolved');
  });

  it('has a Crash view drawing the multiplier live', async () => {
    const { page } = w;
    await page.getByRole('link', { name: 'Crash' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Crash');
    await expect(page.getByRole('link', { name: 'Crash' }).getAttribute('aria-current')).resolves.toBe('page');
    await page.locator('#multiplier', { hasText: /^(?!1\.00x)\d+\.\d{2}x$/ }).waitFor({ timeout: 15_000 });
    await page.locator('#curve path.curve-line').waitFor();
    await page.locator('#phase', { hasText: /Crashed at \d+\.\d{2}x/ }).waitFor({ timeout: 15_000 });
    await expect.poll(() => page.locator('#recent li').count()).toBeGreaterThan(0);
    // A new round begins from 1.00x after the pause; catch it climbing for the picture.
    await page.locator('#phase', { hasText: 'Running' }).waitFor({ timeout: 15_000 });
    // Every seed of this run busts at 1.30x or later.
    await page.locator('#multiplier', { hasText: /^1\.(1[5-9]|2\d)x$/ }).waitFor();
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    expect(await offscreen(page, 'body *')).toEqual([]);
    await screenshot(page, 'player-crash');
  });

  it('fits the bets table on a 390 px phone with long stock lists and four-digit payouts', async () => {
    const { page } = w;
    const { sessionId, url } = await launch('a-rather-long-player-reference-0001');
    await page.goto(url);
    const current = await eventually(async () => {
      const r = await call('GET', '/v1/rounds/current');
      return r.body.status === 'open' && r.body.betting_closes_at - Date.now() > 500 ? r.body : undefined;
    }, 15_000);
    const picks = [
      ['AAPL', 'AMZN', 'GOOG', 'META'],
      ['MSFT', 'NFLX', 'NVDA', 'TSLA', 'AAPL', 'AMZN', 'GOOG'],
    ];
    for (const [i, selected] of picks.entries()) {
      const r = await call('POST', '/v1/bets/reserve', {
        session_id: sessionId,
        round_id: current.round_id,
        selected_stocks: selected,
        stake: 999.99,
        idempotency_key: `wide-${current.round_id}-${i}`,
      });
      expect(r.status).toBe(200);
    }
    // Settled: one of the two bets won 999.99 × 8 × 0.95 / 4 = 1899.98, or 7 stocks' 1085.70.
    await expect
      .poll(() => page.locator('#bets tbody tr td.num:last-child', { hasText: /^\d+\.\d{2}$/ }).count(), {
        timeout: 20_000,
      })
      .toBe(2);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    expect(await offscreen(page, 'body *')).toEqual([]);
    await screenshot(page, 'player-phone-bets', true);
  });

  it('refuses an expired token with a page that links back to the operator, and an unknown one', async () => {
    const { page } = w;
    const { sessionId, url } = await launch('bob');
    await t.app.db.run('UPDATE sessions SET expires_at = ? WHERE id = ?', [Date.now() - 1, sessionId]);
    const res = await page.goto(url);
    expect(res?.status()).toBe(410);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Session expired');
    await expect(page.getByRole('link', { name: 'Back to the operator' }).getAttribute('href')).resolves.toBe(
      RETURN_URL,
    );
    await screenshot(page, 'player-expired');

    const unknown = await page.goto(`${t.baseUrl}/play?token=${'A'.repeat(43)}`);
    expect(unknown?.status()).toBe(404);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Session not found');
    expect(await page.getByRole('link', { name: 'Back to the operator' }).count()).toBe(0);
    // Chromium reports each refused document status; nothing else reached the console.
    expect(
      unexpectedErrors(w.errors, [
        { status: 410, path: '/play' },
        { status: 404, path: '/play' },
      ]),
    ).toEqual([]);
    expect(w.errors).toHaveLength(2);
  });
});
