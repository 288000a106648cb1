import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyServiceSignature } from '../../src/signing/webhook-signature';
import { client, eventually, startTestApp, withSeeds, type TestApp, type TestOperator } from '../support/harness';
import {
  FAST_ROUNDS,
  horizontalOverflow,
  launchBrowser,
  offscreen,
  screenshot,
  shortCrashSeeds,
  startReceiver,
  unexpectedErrors,
  watchedPage,
  type Receiver,
  type WatchedPage,
} from './support';

const EMAIL = 'ops@partner.example';
const PASSWORD = 'a long dashboard passphrase';

describe('partner dashboard in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let w: WatchedPage;
  let op: TestOperator;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startTestApp({ env: FAST_ROUNDS, beforeStart: withSeeds('crash', shortCrashSeeds(150)) });
    op = await t.createOperator({ name: 'Acme Gaming' });
    await t.app.services.dashboardUsers.createUser({ operatorId: op.id, email: EMAIL, password: PASSWORD });
    receiver = await startReceiver();
    browser = await launchBrowser();
    w = await watchedPage(browser);
  });

  afterAll(async () => {
    // Pages first: their live feeds would otherwise try to reconnect to a stopped server.
    await w?.context.close();
    await browser?.close();
    await receiver?.close();
    await t?.close();
  });

  it('signs in (a wrong password is refused) and lands on the live screen', async () => {
    const { page } = w;
    await page.goto(`${t.baseUrl}/dashboard/webhooks`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Wrong email or password');

    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back where the redirect started.
    await page.waitForURL(`${t.baseUrl}/dashboard/webhooks`);
    const cookies = await w.context.cookies();
    const session = cookies.find((c) => c.name === 'dash_session')!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/dashboard' });

    await page.getByRole('link', { name: 'Live' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Live');
  });

  it('shows Crash and Stock Race live, with the crash point and RTP charts', async () => {
    const { page } = w;
    // The multiplier climbs past 1.00x in a running round, from the SSE feed.
    await page.locator('#crash-multiplier', { hasText: /^(?!1\.00x)\d+\.\d{2}x$/ }).waitFor();
    await expect.poll(() => page.locator('#race-board li').count()).toBe(8);
    await page.locator('#race-phase', { hasText: /Racing|Winner/ }).waitFor({ timeout: 15_000 });
    // A finished crash round reaches the bar chart without a reload.
    await page.locator('#crash-points rect').first().waitFor({ timeout: 20_000 });
    expect(await page.locator('#rtp-legend li').count()).toBe(2);
    await expect(page.locator('#rtp-legend').textContent()).resolves.toContain('configured 99.00%');
  });

  it('adds a webhook endpoint, shows its secret once, and logs a real signed delivery', async () => {
    const { page } = w;
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL').fill(receiver.url);
    // Only the test ping and round closes: keeps the log readable.
    for (const kind of ['round.opened', 'bet.settled', 'compliance.flag']) await page.getByLabel(kind).uncheck();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Endpoint added');
    const secret = await page.getByRole('textbox', { name: 'Secret', exact: true }).inputValue();
    expect(secret).toMatch(/^whsec_/);

    await page.getByRole('link', { name: 'Go to the endpoint and its delivery log' }).click();
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await expect(page.getByRole('status').first().textContent()).resolves.toContain('Test event queued');
    // The log refreshes itself: the test ping and a round.closed show up delivered with a 200.
    const log = page.locator('#delivery-log');
    await log.locator('tr', { hasText: 'webhook.test' }).locator('.badge-delivered').waitFor();
    await log
      .locator('tr', { hasText: 'round.closed' })
      .locator('.badge-delivered')
      .first()
      .waitFor({ timeout: 15_000 });
    await expect(log.locator('tr', { hasText: 'webhook.test' }).locator('.attempts').textContent()).resolves.toMatch(
      /#1 .*: 200, \d+ ms/,
    );

    const ping = receiver.received.find((r) => r.body.includes('"webhook.test"'))!;
    const check = verifyServiceSignature({
      secret,
      rawBody: ping.body,
      header: String(ping.headers['x-service-signature']),
      now: Date.now(),
    });
    expect(check.valid).toBe(true);
    await screenshot(page, 'dashboard-webhooks', true);

    // Rotation: a new secret, shown once, and the previous one keeps signing during the overlap.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Secret rotated');
    const rotated = await page.getByRole('textbox', { name: 'Secret', exact: true }).inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await expect(page.locator('main').textContent()).resolves.toContain('The previous secret keeps working until');
    await page.getByRole('link', { name: 'Back to the endpoint' }).click();
    await page.getByRole('button', { name: 'Send a test event' }).click();
    const second = await eventually(async () => receiver.received.filter((r) => r.body.includes('"webhook.test"'))[1]);
    for (const s of [secret, rotated]) {
      expect(
        verifyServiceSignature({
          secret: s,
          rawBody: second.body,
          header: String(second.headers['x-service-signature']),
          now: Date.now(),
        }).valid,
      ).toBe(true);
    }
  });

  it('rotates the API secret: the new one is shown once and both sign during the overlap', async () => {
    const { page } = w;
    await page.getByRole('link', { name: 'Credentials' }).click();
    await expect(page.getByLabel('API key').inputValue()).resolves.toBe(op.apiKey);
    await expect(page.locator('.facts').textContent()).resolves.toContain('No rotation in progress');
    await page.getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const fresh = await page.getByRole('textbox', { name: 'Secret', exact: true }).inputValue();
    expect(fresh).toMatch(/^sk_/);
    for (const secret of [fresh, op.apiSecret]) {
      const res = await client(t.baseUrl, op, 'B')('GET', '/v1/rounds/current', undefined, { secret });
      expect(res.status).toBe(200);
    }
    await page.getByRole('link', { name: 'Back to credentials' }).click();
    await expect(page.locator('.facts').textContent()).resolves.toContain(
      'The previous secret is still accepted until',
    );
  });

  it('lists rounds with seeds and verify links, and a bet with its audit trail', async () => {
    const { page } = w;
    const call = client(
      t.baseUrl,
      { ...op, apiSecret: (await t.app.services.operators.credentialsById(op.id)).secrets[0]! },
      'A',
    );
    // Four players in one round (the last three give the RTP chart something to measure).
    const bets = [
      ['player-7', 250, 1.05],
      ['player-8', 400, 1.2],
      ['player-9', 300, 1.5],
      ['player-10', 100, 1.1],
    ] as const;
    const placed = await eventually(async () => {
      const round = (await call('GET', '/api/public/v1/rounds/current')).body;
      if (round.status !== 'open' || round.betting_closes_at - Date.now() < 800) return undefined;
      const all = await Promise.all(
        bets.map(([player, amount, target]) =>
          call(
            'POST',
            '/api/public/v1/place-bet',
            { external_user_id: player, amount, auto_cashout: target },
            { idempotencyKey: `k-${player}-${round.round_id}` },
          ),
        ),
      );
      return all.every((r) => r.status === 200) ? all.map((r) => r.body) : undefined;
    }, 20_000);
    await eventually(async () => {
      const states = await Promise.all(
        placed.map(async (b) => (await call('GET', `/api/public/v1/bets/${b.bet_id}`)).body.status),
      );
      return states.every((x) => x !== 'active') ? true : undefined;
    }, 20_000);

    await page.getByRole('link', { name: 'Rounds' }).click();
    const closed = page.locator('tbody tr', { hasText: 'crashed at' }).first();
    await closed.waitFor();
    await expect(closed.locator('td.mono').nth(1).textContent()).resolves.toMatch(/^[0-9a-f]{16}…$/);
    await screenshot(page, 'dashboard-rounds');
    const verify = await closed.getByRole('link', { name: /Verify/ }).getAttribute('href');
    const fairness = (await (await fetch(`${t.baseUrl}${verify}`)).json()) as { commitment_holds: boolean };
    expect(fairness.commitment_holds).toBe(true);

    await page.getByRole('link', { name: 'Bets', exact: true }).click();
    await page.getByLabel('Player', { exact: true }).fill('player-7');
    await page.getByRole('button', { name: 'Filter' }).click();
    const rows = page.locator('tbody tr');
    expect(await rows.count()).toBe(1);
    await rows
      .first()
      .getByRole('link', { name: /Audit trail/ })
      .click();
    const trail = page.locator('ol.timeline');
    await expect(trail.textContent()).resolves.toContain('Placed: 250 on round');
    await expect(trail.textContent()).resolves.toContain('Cashed out at 1.05x (auto), payout 262');
  });

  it('is usable by keyboard and at phone width, and signs out', async () => {
    const { page } = w;
    await page.getByRole('link', { name: 'Compliance' }).click();
    // The click only starts the navigation: a Tab pressed before the new page has loaded lands on the
    // old one, and the new page then has nothing focused.
    await page.waitForURL(`${t.baseUrl}/dashboard/compliance`);
    await page.keyboard.press('Tab');
    await expect(page.locator(':focus').textContent()).resolves.toBe('Skip to content');
    await page.setViewportSize({ width: 390, height: 844 });
    for (const path of [
      '/dashboard',
      '/dashboard/webhooks',
      '/dashboard/rounds',
      '/dashboard/bets',
      '/dashboard/settlements',
      '/dashboard/credentials',
      '/dashboard/compliance',
    ]) {
      await page.goto(`${t.baseUrl}${path}`);
      expect(await horizontalOverflow(page), path).toBeLessThanOrEqual(0);
      // Wide data tables may scroll inside their labelled, focusable region; everything else fits.
      expect(await offscreen(page, 'body *:not(.table-wrap *)'), path).toEqual([]);
      // A table that scrolls does so in a region a keyboard can reach and scroll.
      const wraps = page.locator('.table-wrap');
      for (let i = 0; i < (await wraps.count()); i++) {
        await expect(wraps.nth(i).getAttribute('tabindex'), path).resolves.toBe('0');
        await expect(wraps.nth(i).getAttribute('role'), path).resolves.toBe('region');
      }
    }
    await page.setViewportSize({ width: 1280, height: 860 });

    // The live screen after some play, mid-race, for the record.
    await page.getByRole('link', { name: 'Live' }).click();
    await page.locator('#rtp-legend', { hasText: 'measured over' }).waitFor();
    // The four settled bets, 1050 staked in all.
    await expect(page.locator('#totals tbody tr td').nth(2).textContent()).resolves.toBe('4');
    await expect(page.locator('#totals tbody tr td').nth(3).textContent()).resolves.toBe('1050');
    const bothMoving = async (): Promise<boolean> => {
      const progress = Number(await page.locator('#race-progress').getAttribute('value'));
      const racing = ((await page.locator('#race-phase').textContent()) ?? '').startsWith('Racing');
      const climbing = ((await page.locator('#crash-phase').textContent()) ?? '').startsWith('Running');
      const multiplier = Number.parseFloat((await page.locator('#crash-multiplier').textContent()) ?? '');
      return racing && progress > 400 && progress < 950 && climbing && multiplier >= 1.08;
    };
    await expect.poll(bothMoving, { timeout: 40_000, interval: 100 }).toBe(true);
    await screenshot(page, 'dashboard-live', true);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect(page.getByRole('status').textContent()).resolves.toBe('You are signed out.');
    await page.goto(`${t.baseUrl}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    // The one refused sign-in (401) at the start is the only error the console saw.
    expect(unexpectedErrors(w.errors, [{ status: 401, path: '/dashboard/login' }])).toEqual([]);
    expect(w.errors).toHaveLength(1);
    // The wait for both games mid-phase may take up to its own 40 s (the Crash and Stock Race cycles, about
    // 5.4 s and 6.5 s long, line up again only every 30 s or so): the test's limit must leave room for it.
  }, 75_000);
});
