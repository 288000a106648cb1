import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LOGIN_THROTTLE, LoginThrottle } from '../../src/dashboard/login-throttle';
import { browser, csrfOf } from '../support/dashboard-browser';
import { startTestApp, type TestApp } from '../support/harness';

/**
 * Dashboard sign-in with a device cookie: the browser the owner signed in with before is not held
 * back by an attacker's failures on the account from elsewhere; without that cookie (or with a forged
 * one, or another account's) the account's wait still applies.
 */
const OWNER = 'owner@casino.test';
const COLLEAGUE = 'colleague@casino.test';
const PASSWORD = 'correct horse battery staple';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One sign-in attempt from `address` (the proxy in front says so in X-Forwarded-For). */
async function attempt(b: ReturnType<typeof browser>, address: string, email: string, password: string) {
  const via = { 'x-forwarded-for': address };
  const form = await b.go('GET', '/dashboard/login', undefined, via);
  return b.go('POST', '/dashboard/login', { _csrf: csrfOf(form.text), email, password }, via);
}

describe('dashboard sign-in: a device cookie from an earlier sign-in', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engines: false, env: { TRUST_PROXY_ADDRESSES: 'loopback' } });
    const op = await t.createOperator();
    await t.app.services.dashboardUsers.createUser({ operatorId: op.id, email: OWNER, password: PASSWORD });
    await t.app.services.dashboardUsers.createUser({ operatorId: op.id, email: COLLEAGUE, password: PASSWORD });
  });
  afterAll(async () => t?.close());

  it('lets its browser in while failures from elsewhere hold the account; nothing else gets past', async () => {
    const owners = browser(t.baseUrl);
    expect((await attempt(owners, '198.51.100.7', OWNER, PASSWORD)).status).toBe(303);
    const issued = owners.cookies.find((c) => c.startsWith('dash_device='));
    expect(issued).toMatch(/; HttpOnly/i);
    expect(issued).toMatch(/; Path=\/dashboard\/login/);
    expect(issued).toMatch(/; SameSite=Strict/i);
    const device = owners.jar.get('dash_device')!;
    // The cookie is sealed: neither the email nor anything readable is in it.
    expect(decodeURIComponent(device)).not.toContain(OWNER);

    const colleagues = browser(t.baseUrl);
    expect((await attempt(colleagues, '198.51.100.9', COLLEAGUE, PASSWORD)).status).toBe(303);
    const colleagueDevice = colleagues.jar.get('dash_device')!;

    // An attacker guesses from its own address until the account's wait is long enough to look at.
    const attacker = browser(t.baseUrl);
    for (let i = 0; ; i++) {
      expect(i, 'the account wait never reached 8 s').toBeLessThan(40);
      const res = await attempt(attacker, '203.0.113.66', OWNER, `guess ${i}`);
      if (res.status === 401) continue;
      expect(res.status).toBe(429);
      const wait = Number(res.headers.get('retry-after'));
      if (wait >= 8) break;
      await sleep(wait * 1000);
    }

    // Without the cookie the right password is held back, from a fresh address too.
    const cookieless = await attempt(browser(t.baseUrl), '198.51.100.8', OWNER, PASSWORD);
    expect(cookieless.status).toBe(429);
    expect(cookieless.text).toContain('Too many failed sign-ins');

    // A forged cookie, a tampered one and the colleague's genuine one do not open the way either.
    const tampered = `${device.slice(0, 20)}${device[20] === 'A' ? 'B' : 'A'}${device.slice(21)}`;
    for (const cookie of ['v1.forged.cookie.value', tampered, colleagueDevice]) {
      const b = browser(t.baseUrl);
      b.jar.set('dash_device', cookie);
      const res = await attempt(b, '198.51.100.7', OWNER, PASSWORD);
      expect(res.status, cookie).toBe(429);
      expect(b.jar.get('dash_session'), cookie).toBeUndefined();
    }

    // The owner's own browser (its session ended since; the device cookie kept) signs in at once.
    owners.jar.delete('dash_session');
    const again = await attempt(owners, '198.51.100.7', OWNER, PASSWORD);
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe('/dashboard');
    expect(owners.jar.get('dash_device')).not.toBe(device);
    expect((await owners.go('GET', '/dashboard/credentials')).status).toBe(200);
  }, 120_000);
});

describe('LoginThrottle: failures made from a trusted browser', () => {
  it('count against that device, not the account, and past the free ones it is trusted no more', async () => {
    const throttle = new LoginThrottle(null, { ...DEFAULT_LOGIN_THROTTLE, freeAccountFailures: 3 });
    for (let i = 0; i < 3; i++) await throttle.noteFailure('198.51.100.7', OWNER, 'device-1');
    // The account itself took none of them: a browser without the cookie is not held back.
    expect(await throttle.waitSeconds('198.51.100.8', OWNER, null)).toBe(0);
    // The device has used its free failures: from now on its failures are the account's.
    for (let i = 0; i < 4; i++) await throttle.noteFailure('198.51.100.7', OWNER, 'device-1');
    expect(await throttle.waitSeconds('198.51.100.7', OWNER, 'device-1')).toBeGreaterThan(0);
    expect(await throttle.waitSeconds('198.51.100.8', OWNER, null)).toBeGreaterThan(0);
    // Another trusted device of the account is not held back by them.
    expect(await throttle.waitSeconds('198.51.100.9', OWNER, 'device-2')).toBe(0);
  });
});
