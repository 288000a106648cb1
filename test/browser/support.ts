import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { crashPointFromHash } from '../../src/games/crash/fairness';
import { DEFAULT_BUSTABIT_SALT } from '../../src/config/game-defaults';

export const CHROMIUM = '/usr/bin/chromium';

/**
 * Debian's Chromium driven by playwright-core. Playwright gives every launch a fresh profile
 * (its own --user-data-dir in a new temp directory) and refuses one passed in `args`, so the
 * flags below are everything else the runs need: no sandbox (containers), no GPU, no network
 * chatter of its own.
 */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install it with apt-get install -y chromium (.ci/run does this)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export interface WatchedPage {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught page errors seen so far. */
  errors: string[];
}

/** A page in its own context (cookies included) that records every console error it sees. */
export async function watchedPage(browser: Browser, viewport = { width: 1280, height: 860 }): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, locale: 'en-GB', timezoneId: 'UTC' });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`${msg.text()} @ ${msg.location().url}`);
  });
  page.on('pageerror', (err) => errors.push(`uncaught: ${err.message}`));
  page.setDefaultTimeout(20_000);
  return { context, page, errors };
}

/**
 * The console errors other than Chromium's own line for a document the server answered with an
 * error status on purpose (a refused sign-in, an expired player link): those are the contract, not
 * a fault of the page.
 */
export function unexpectedErrors(
  errors: readonly string[],
  expected: { status: number; path: string }[] = [],
): string[] {
  return errors.filter(
    (e) =>
      !expected.some(
        (x) =>
          e.startsWith(`Failed to load resource: the server responded with a status of ${x.status} `) &&
          new URL(e.split(' @ ')[1] ?? 'x:').pathname === x.path,
      ),
  );
}

/**
 * Screenshots are always taken (rendering must work); they land in docs/screenshots/ only with
 * UPDATE_SCREENSHOTS=1, so an ordinary test run leaves the committed images alone.
 */
let shots: string | null = null;
function shotsDir(): string {
  shots ??=
    process.env.UPDATE_SCREENSHOTS === '1'
      ? resolve(import.meta.dirname, '../../docs/screenshots')
      : mkdtempSync(join(tmpdir(), 'rbs-shots-'));
  mkdirSync(shots, { recursive: true });
  return shots;
}

export async function screenshot(page: Page, name: string, fullPage = false): Promise<string> {
  const path = join(shotsDir(), `${name}.png`);
  await page.screenshot({ path, fullPage, animations: 'disabled', caret: 'hide' });
  return path;
}

/** The page fits its viewport: nothing forces sideways scrolling at phone width. */
export async function horizontalOverflow(page: Page): Promise<number> {
  // A string, not a function: this project's type library is Node's, not the DOM's.
  return page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
}

/**
 * Elements matching `selector` that do not fit the viewport sideways (a cut column, a button off
 * the edge), described as `tag#id.class "text" left..right`. Elements hidden on purpose (zero size,
 * the visually-hidden `.sr-only` labels, a skip link parked wholly left of the page until focused)
 * do not count: left-to-right content never spills off the left edge by accident. Document overflow
 * alone misses these when a wrapper scrolls or clips: the page does not scroll, the content is still
 * out of sight.
 */
export async function offscreen(page: Page, selector: string): Promise<string[]> {
  // A string, not a function (this project's type library is Node's): the selector goes in as JSON.
  return page.evaluate<string[]>(
    `[...document.querySelectorAll(${JSON.stringify(selector)})]
      .filter((el) => !el.closest('.sr-only'))
      .map((el) => [el, el.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0 && r.height > 0 && r.right > 0 &&
        (r.left < -0.5 || r.right > window.innerWidth + 0.5))
      .map(([el, r]) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
        (el.classList.length ? '.' + [...el.classList].join('.') : '') +
        ' "' + (el.textContent || '').trim().slice(0, 30) + '" ' + Math.round(r.left) + '..' + Math.round(r.right))`,
  );
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** The status every request is answered with from now on (200 unless changed). */
  answer: { status: number };
  close(): Promise<void>;
}

/** A webhook (or wallet) receiver on the loopback interface that keeps what it got. */
export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const answer = { status: 200 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      res
        .writeHead(answer.status, { 'content-type': 'application/json' })
        .end(answer.status < 300 ? '{"ok":true}' : '{"error":"unavailable"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    answer,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Round timings short enough to watch several rounds within a test. */
export const FAST_ROUNDS = {
  CRASH_BETTING_WINDOW_MS: '1500',
  CRASH_PAUSE_MS: '600',
  CRASH_TICK_MS: '100',
  STOCK_RACE_BETTING_WINDOW_MS: '2500',
  STOCK_RACE_DURATION_MS: '2500',
  STOCK_RACE_PAUSE_MS: '1500',
  STOCK_RACE_TICK_MS: '250',
};

/**
 * Crash seeds whose rounds bust between `min` and `max` hundredths (default edge and salt), so a
 * test sees rounds finish within seconds instead of waiting on a 50x round.
 */
export function shortCrashSeeds(count: number, min = 110, max = 160): string[] {
  const seeds: string[] = [];
  while (seeds.length < count) {
    const seed = randomBytes(32).toString('hex');
    const point = crashPointFromHash(seed, DEFAULT_BUSTABIT_SALT, 100);
    if (point >= min && point <= max) seeds.push(seed);
  }
  return seeds;
}

/** Signs in through the form, as a person would. */
export async function signInDashboard(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/dashboard/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${baseUrl}/dashboard`);
}
