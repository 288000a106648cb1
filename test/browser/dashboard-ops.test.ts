import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_OPERATOR_SETTINGS } from '../../src/operators/operator';
import { client, eventually, startTestApp, withSeeds, type TestApp, type TestOperator } from '../support/harness';
import {
  FAST_ROUNDS,
  launchBrowser,
  screenshot,
  shortCrashSeeds,
  signInDashboard,
  startReceiver,
  unexpectedErrors,
  watchedPage,
  type Receiver,
  type WatchedPage,
} from './support';

const EMAIL = 'ops@partner.example';
const PASSWORD = 'a long dashboard passphrase';

/** The operations screens: dead letters and their re-send, endpoint edits, wallet retries, compliance flags. */
describe('partner dashboard operations in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let w: WatchedPage;
  let op: TestOperator;
  let hooks: Receiver;
  let wallet: Receiver;

  beforeAll(async () => {
    hooks = await startReceiver();
    wallet = await startReceiver();
    t = await startTestApp({
      // Two webhook attempts, then a dead letter; a failed wallet call waits ten minutes unless retried by hand.
      env: { ...FAST_ROUNDS, WEBHOOK_RETRY_SCHEDULE_MS: '0,300', WALLET_RETRY_SCHEDULE_MS: '0,600000' },
      beforeStart: withSeeds('crash', shortCrashSeeds(150)),
    });
    op = await t.createOperator({ name: 'Acme Gaming', walletUrl: wallet.url });
    await t.app.services.operators.updateSettings(op.id, {
      compliance: { ...DEFAULT_OPERATOR_SETTINGS.compliance, large_stake: 100 },
    });
    await t.app.services.dashboardUsers.createUser({ operatorId: op.id, email: EMAIL, password: PASSWORD });
    browser = await launchBrowser();
    w = await watchedPage(browser);
    w.page.on('dialog', (d) => void d.accept());
    await signInDashboard(w.page, t.baseUrl, EMAIL, PASSWORD);
  });

  afterAll(async () => {
    await w?.context.close();
    await browser?.close();
    await t?.close();
    await hooks?.close();
    await wallet?.close();
  });

  it('re-sends a dead-lettered delivery, then edits and deletes the endpoint', async () => {
    const { page } = w;
    hooks.answer.status = 500;
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL').fill(hooks.url);
    for (const kind of ['round.opened', 'round.closed', 'bet.settled']) await page.getByLabel(kind).uncheck();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('link', { name: 'Go to the endpoint and its delivery log' }).click();
    await page.getByRole('button', { name: 'Send a test event' }).click();

    const log = page.locator('#delivery-log');
    const dead = log.locator('tr', { hasText: 'webhook.test' }).filter({ has: page.locator('.badge-dead') });
    await dead.waitFor();
    await expect(dead.locator('.attempts li').allTextContents()).resolves.toEqual([
      expect.stringMatching(/^#1 .*: 500, \d+ ms \(.*500.*\)$/),
      expect.stringMatching(/^#2 .*: 500, \d+ ms \(.*500.*\)$/),
    ]);

    hooks.answer.status = 200;
    await dead.getByRole('button', { name: 'Re-send' }).click();
    await expect(page.getByRole('status').first().textContent()).resolves.toBe(
      'Delivery queued again as a new delivery.',
    );
    const resent = log.locator('tr', { hasText: 're-send of' });
    await resent.locator('.badge-delivered').waitFor();
    await expect(resent.locator('.attempts').textContent()).resolves.toMatch(/#1 .*: 200, \d+ ms/);
    expect(hooks.received.filter((r) => r.body.includes('"webhook.test"')).length).toBe(3);

    await page.getByLabel('Enabled').uncheck();
    await page.getByLabel('round.closed').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await expect(page.getByRole('status').first().textContent()).resolves.toBe('Endpoint saved.');
    await expect(page.locator('.facts .badge').textContent()).resolves.toBe('disabled');
    const [endpoint] = await t.app.services.webhooks.listEndpoints(op.id);
    expect(endpoint).toMatchObject({ enabled: false, events: ['round.closed', 'compliance.flag'] });

    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await expect(page.getByRole('status').first().textContent()).resolves.toContain('Endpoint deleted');
    expect(await t.app.services.webhooks.listEndpoints(op.id)).toEqual([]);
  });

  it("retries a pending wallet settlement and shows every settle attempt in the bet's audit trail", async () => {
    const { page } = w;
    wallet.answer.status = 503;
    const call = client(t.baseUrl, op, 'B');
    const launched = await call('POST', '/v1/sessions/launch', {
      player_ref: 'carol',
      currency: 'EUR',
      return_url: 'https://operator.example/lobby',
    });
    const reserved = await eventually(async () => {
      const current = (await call('GET', '/v1/rounds/current')).body;
      if (current.status !== 'open') return undefined;
      const r = await call('POST', '/v1/bets/reserve', {
        session_id: launched.body.session_id,
        round_id: current.round_id,
        selected_stocks: ['AAPL'],
        stake: 2.5,
        idempotency_key: `carol-${current.round_id}`,
      });
      return r.status === 200 ? r.body : undefined;
    }, 15_000);
    // The round closes, the settle call fails once and waits for its next (ten-minute) slot.
    await eventually(async () => (wallet.received.length === 1 ? true : undefined), 20_000);

    await page.getByRole('link', { name: 'Wallet settlements' }).click();
    const row = page.locator('tbody tr', { hasText: reserved.bet_id.slice(0, 20) });
    await expect(row.locator('td').nth(3).textContent()).resolves.toBe('1');
    await expect(row.locator('td').nth(5).textContent()).resolves.toBe('503');
    wallet.answer.status = 200;
    await row.getByRole('button', { name: /Retry now/ }).click();
    await expect(page.getByRole('status').first().textContent()).resolves.toContain('Settlement made due now');
    await eventually(async () => (wallet.received.length === 2 ? true : undefined));
    // Both attempts carried the same idempotency key: the wallet credits once.
    expect(new Set(wallet.received.map((r) => JSON.parse(r.body).idempotency_key))).toEqual(
      new Set([`settle_${reserved.bet_id}`]),
    );

    await page.getByRole('link', { name: 'Bets', exact: true }).click();
    await page.getByLabel('Player', { exact: true }).fill('carol');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('link', { name: /Audit trail/ }).click();
    const trail = page.locator('ol.timeline');
    await expect.poll(() => trail.textContent(), { timeout: 5_000 }).toContain('Confirmed by the wallet');
    const steps = await trail.locator('li').allTextContents();
    expect(steps.map((s) => s.replace(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d /, '').replace(/\d+ ms/, 'N ms'))).toEqual([
      `Placed: 2.50 EUR on AAPL in round #${reserved.round_number}`,
      expect.stringMatching(/^Settled: (won|lost), payout \d+\.\d\d EUR$/),
      `Settle call queued to the wallet (idempotency key settle_${reserved.bet_id})`,
      'Settle attempt 1: 503, N ms (wallet answered 503)',
      'Settle attempt 2: 200, N ms',
      'Confirmed by the wallet',
    ]);
    await screenshot(page, 'dashboard-bet-audit');
  });

  it('lists compliance flags, filtered by rule and player', async () => {
    const { page } = w;
    await page.getByRole('link', { name: 'Compliance' }).click();
    await page.getByLabel('Rule').selectOption('large_stake');
    await page.getByLabel('Player', { exact: true }).fill('carol');
    await page.getByRole('button', { name: 'Filter' }).click();
    const rows = page.locator('tbody tr');
    expect(await rows.count()).toBe(1);
    await expect(rows.first().locator('td').nth(1).textContent()).resolves.toBe('Large stake');
    await expect(rows.first().locator('.details').textContent()).resolves.toContain('threshold100');
    await screenshot(page, 'dashboard-compliance');
    await page.getByLabel('Rule').selectOption('bet_velocity');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect(page.locator('main').textContent()).resolves.toContain('No flags match.');
    expect(unexpectedErrors(w.errors)).toEqual([]);
  });
});
