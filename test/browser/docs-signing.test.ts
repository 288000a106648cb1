import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestOperator } from '../support/harness';
import { launchBrowser, screenshot, watchedPage, type WatchedPage } from './support';

/** The operation block of `method path` in Swagger UI. */
const operation = (page: Page, method: string, path: string): Locator =>
  page.locator(`.opblock.opblock-${method}`, {
    has: page.locator(`.opblock-summary-path[data-path="${path}"]`),
  });

/** Opens the block, presses Try it out (and fills the body), Execute: the live response's status. */
async function tryItOut(block: Locator, body?: string): Promise<number> {
  await block.locator('.opblock-summary').first().click();
  await block.getByRole('button', { name: 'Try it out' }).click();
  // The required header fields: the page's signer replaces them (an Idempotency-Key "auto" too).
  const headers = block.locator('tr[data-param-in="header"] input');
  for (let i = 0; i < (await headers.count()); i++) await headers.nth(i).fill('auto');
  if (body !== undefined) await block.locator('textarea.body-param__text').fill(body);
  await block.getByRole('button', { name: 'Execute' }).click();
  const status = block.locator('.live-responses-table .response .response-col_status').first();
  await status.waitFor({ timeout: 60_000 });
  return Number(((await status.textContent()) ?? '').trim().slice(0, 3));
}

describe('/docs: Try it out signed with a sandbox key (Chromium)', () => {
  let t: TestApp;
  let browser: Browser;
  let w: WatchedPage;
  let sandbox: TestOperator;
  let live: TestOperator;
  /** Every request the page sent to the API, with its headers. */
  const sent: { url: string; headers: Record<string, string> }[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    sandbox = await t.createOperator({ name: 'Integrator (test)', mode: 'test' });
    live = await t.createOperator({ name: 'Live' });
    browser = await launchBrowser();
    w = await watchedPage(browser);
    w.page.on('request', (r) => {
      if (/\/(api\/public\/)?v1\//.test(new URL(r.url()).pathname)) sent.push({ url: r.url(), headers: r.headers() });
    });
  }, 60_000);

  afterAll(async () => {
    await w?.context.close();
    await browser?.close();
    await t?.close();
  });

  it('refuses a live key, then signs a GET and a keyed POST with the sandbox key: 2xx answers', async () => {
    const { page } = w;
    await page.goto(`${t.baseUrl}/docs`);
    const form = page.locator('#sandbox-signing');
    await form.waitFor({ timeout: 60_000 });
    const status = form.getByRole('status');

    await form.getByLabel('API key').fill(live.apiKey);
    await form.getByLabel('API secret').fill(live.apiSecret);
    await form.getByRole('button', { name: 'Use for signing' }).click();
    await expect(status.textContent()).resolves.toContain('Refused');

    await form.getByLabel('API key').fill(sandbox.apiKey);
    await form.getByLabel('API secret').fill(sandbox.apiSecret);
    await form.getByRole('button', { name: 'Use for signing' }).click();
    await expect(status.textContent()).resolves.toContain(`Signing as ${sandbox.apiKey}`);
    // The secret leaves the form once taken: nothing on the page shows it.
    await expect(form.getByLabel('API secret').inputValue()).resolves.toBe('');

    const read = await tryItOut(operation(page, 'get', '/api/public/v1/rounds/current'));
    expect(read).toBe(200);
    const write = await tryItOut(
      operation(page, 'post', '/api/public/v1/place-bet'),
      JSON.stringify({ external_user_id: 'docs-player', amount: 100 }),
    );
    // Signed and keyed: accepted in the sandbox round's window, or refused by the game, never by auth.
    expect([200, 409]).toContain(write);
    const scripted = await tryItOut(
      operation(page, 'post', '/api/public/v1/sandbox/crash/next-outcomes'),
      JSON.stringify({ crash_points: [2] }),
    );
    expect(scripted).toBeGreaterThanOrEqual(200);
    expect(scripted).toBeLessThan(300);
    await screenshot(page, 'docs-try-it-out-signed', true);

    const get = sent.find((r) => r.url.endsWith('/api/public/v1/rounds/current'))!;
    expect(get.headers).toMatchObject({
      'x-api-key': sandbox.apiKey,
      'x-signature': expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const bet = sent.find((r) => r.url.endsWith('/api/public/v1/place-bet'))!;
    expect(bet.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    // The secret itself never travels.
    for (const r of sent) expect(JSON.stringify(r.headers)).not.toContain(sandbox.apiSecret);
  }, 300_000);
});
