import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, startTestApp, withSeeds, type TestApp } from '../support/harness';
import { FAST_ROUNDS, launchBrowser, screenshot, shortCrashSeeds, watchedPage, type WatchedPage } from './support';

const EMAIL = 'ops@long-ids.example';
const PASSWORD = 'a long dashboard passphrase';
/** A valid external user id of 120 characters, with no place a browser could break it. */
const LONG_PLAYER = `player-${'0123456789abcdefghijklmnopqrstuvwxyz'.repeat(4)}`.slice(0, 120);

interface Box {
  left: number;
  right: number;
  width: number;
}

/** Where an element is, sideways (a string for page.evaluate: the project's types are Node's, not the DOM's). */
const boxOf = (page: Page, selector: string): Promise<Box> =>
  page.evaluate<Box>(
    `(() => { const r = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect();
      return { left: r.left, right: r.right, width: r.width }; })()`,
  );

describe('dashboard tables hold long ids (Chromium)', () => {
  let t: TestApp;
  let browser: Browser;
  let w: WatchedPage;

  beforeAll(async () => {
    t = await startTestApp({ env: FAST_ROUNDS, beforeStart: withSeeds('crash', shortCrashSeeds(60)) });
    const op = await t.createOperator({ name: 'Long ids' });
    await t.app.services.dashboardUsers.createUser({ operatorId: op.id, email: EMAIL, password: PASSWORD });
    const call = client(t.baseUrl, op);
    await eventually(async () => {
      const round = (await call('GET', '/api/public/v1/rounds/current')).body;
      if (round.status !== 'open' || round.betting_closes_at - Date.now() < 500) return undefined;
      const body = { external_user_id: LONG_PLAYER, amount: 250, auto_cashout: 1.05 };
      const placed = await call('POST', '/api/public/v1/place-bet', body, { idempotencyKey: `k-${round.round_id}` });
      return placed.status === 200 ? placed.body : undefined;
    }, 30_000);
    browser = await launchBrowser();
    w = await watchedPage(browser);
    await w.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.baseUrl });
    await w.page.goto(`${t.baseUrl}/dashboard/login`);
    await w.page.getByLabel('Email').fill(EMAIL);
    await w.page.getByLabel('Password').fill(PASSWORD);
    await w.page.getByRole('button', { name: 'Sign in' }).click();
    await w.page.waitForURL(`${t.baseUrl}/dashboard`);
  }, 120_000);

  afterAll(async () => {
    await w?.context.close();
    await browser?.close();
    await t?.close();
  });

  for (const [label, viewport] of [
    ['desktop', { width: 1280, height: 860 }],
    ['phone', { width: 390, height: 844 }],
  ] as const) {
    it(`the Bets table fits its area at ${label} width, Stake, Status and Payout in sight`, async () => {
      const { page } = w;
      await page.setViewportSize(viewport);
      await page.goto(`${t.baseUrl}/dashboard/bets`);
      const row = page.locator('tbody tr').first();
      await row.waitFor();
      await screenshot(page, `dashboard-bets-long-id-${label}`, true);

      const area = await boxOf(page, '.table-wrap');
      const table = await boxOf(page, '.table-wrap table');
      expect(table.width).toBeLessThanOrEqual(area.width + 0.5);
      // Nothing to scroll sideways inside the region either.
      const scrolls = await page.evaluate<number>(
        `(() => { const el = document.querySelector('.table-wrap'); return el.scrollWidth - el.clientWidth; })()`,
      );
      expect(scrolls).toBeLessThanOrEqual(0);
      for (const column of ['Stake', 'Status', 'Payout']) {
        const cell = await boxOf(page, `tbody tr:first-child td[data-label="${column}"]`);
        expect(cell.width, column).toBeGreaterThan(0);
        expect(cell.left, column).toBeGreaterThanOrEqual(area.left - 0.5);
        expect(cell.right, column).toBeLessThanOrEqual(area.right + 0.5);
      }
      await expect(row.locator('td[data-label="Stake"]').textContent()).resolves.toMatch(/250/);

      // The id is cut with an ellipsis, whole on hover, and whole in the page for search and copy.
      const id = row.locator('.long-id-text');
      await expect(id.getAttribute('title')).resolves.toBe(LONG_PLAYER);
      await expect(id.textContent()).resolves.toBe(LONG_PLAYER);
      const cut = await page.evaluate<{ overflow: string; hidden: number }>(
        `(() => { const el = document.querySelector('tbody tr .long-id-text'); const s = getComputedStyle(el);
          return { overflow: s.textOverflow, hidden: el.scrollWidth - el.clientWidth }; })()`,
      );
      expect(cut.overflow).toBe('ellipsis');
      expect(cut.hidden).toBeGreaterThan(0);

      await row.getByRole('button', { name: 'Copy the player id' }).click();
      await expect(row.getByRole('button', { name: 'Copy the player id' }).textContent()).resolves.toBe('Copied');
      await expect(page.evaluate<string>('navigator.clipboard.readText()')).resolves.toBe(LONG_PLAYER);
      expect(w.errors).toEqual([]);
    }, 60_000);
  }
});
