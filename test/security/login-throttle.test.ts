import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/clock/clock';
import { DashboardAuth } from '../../src/dashboard-users/dashboard-auth';
import { SecretBox } from '../../src/operators/secret-box';
import { DEFAULT_LOGIN_THROTTLE, LoginThrottle } from '../../src/dashboard/login-throttle';
import type { Database } from '../../src/store/database';
import { freshDatabase, REDIS_URL, startTestApp, type TestApp } from '../support/harness';

/**
 * Dashboard sign-in throttling: an attacker guessing the owner's password from one address gets
 * that address refused and the account only a bounded wait; the owner, from another address, is
 * never kept out longer than that wait. Memory stays bounded without ever forgetting every entry.
 */
const OWNER = 'owner@casino.test';
const PASSWORD = 'correct horse battery staple';
const ATTACKER = '203.0.113.66';
const OWNER_ADDRESS = '198.51.100.7';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const throttled = (o: Partial<typeof DEFAULT_LOGIN_THROTTLE>) =>
  new LoginThrottle(null, { ...DEFAULT_LOGIN_THROTTLE, ...o });
const signedIn = { session: { user: { email: OWNER } } };
/** The master-key box device cookies are sealed with. */
const BOX = new SecretBox(randomBytes(32));
const TOO_LONG = 'x'.repeat(1025); // refused before any password hashing: keeps the loops fast

let db: Database;
let dispose: () => Promise<void>;
let operatorId: string;

beforeAll(async () => {
  const fresh = await freshDatabase('sqlite');
  db = fresh.db;
  dispose = fresh.dispose;
  operatorId = 'op_throttle_test';
  await db.transaction((tx) =>
    tx.run(
      `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
       VALUES (?, 'T', ?, 'x', 'active', '{}', 0, 0)`,
      [operatorId, `key_${randomBytes(8).toString('hex')}`],
    ),
  );
  const auth = new DashboardAuth(db, systemClock, new LoginThrottle(null), BOX);
  await auth.createUser({ operatorId, email: OWNER, password: PASSWORD });
});
afterAll(async () => dispose?.());

async function hammer(auth: DashboardAuth, times: number, address = ATTACKER): Promise<string[]> {
  const codes: string[] = [];
  for (let i = 0; i < times; i++) {
    codes.push(
      await auth.signIn(OWNER, `guess ${i}`, address).then(
        () => 'OK',
        (e: { code: string }) => e.code,
      ),
    );
  }
  return codes;
}

describe('dashboard sign-in throttle (in memory)', () => {
  it('keeps the owner out of an attacked account no longer than the bounded wait, from another address', async () => {
    const auth = new DashboardAuth(db, systemClock, throttled({ maxAccountWaitSeconds: 2 }), BOX);
    const codes = await hammer(auth, 40);
    expect(codes.slice(0, 6)).toEqual(Array(6).fill('MISSING_CREDENTIALS'));
    expect(codes.slice(6).every((c) => c === 'RATE_LIMITED')).toBe(true);

    type Refusal = { code: string; details: { retryAfterSeconds: number } };
    const refused = await auth.signIn(OWNER, PASSWORD, OWNER_ADDRESS).catch((e: Refusal) => e);
    if ('code' in refused) {
      expect(refused.code).toBe('RATE_LIMITED');
      expect(refused.details.retryAfterSeconds).toBeLessThanOrEqual(2);
      await sleep(refused.details.retryAfterSeconds * 1000 + 100);
    }
    await expect(auth.signIn(OWNER, PASSWORD, OWNER_ADDRESS)).resolves.toMatchObject(signedIn);
  });

  it('refuses the address that keeps failing, whichever accounts it tries', async () => {
    const auth = new DashboardAuth(db, systemClock, throttled({ addressFailures: 10 }), BOX);
    for (let i = 0; i < 10; i++) {
      const attempt = auth.signIn(`user${i}@casino.test`, TOO_LONG, ATTACKER);
      await expect(attempt).rejects.toMatchObject({ code: 'MISSING_CREDENTIALS' });
    }
    const refused = auth.signIn('someone-else@casino.test', TOO_LONG, ATTACKER);
    await expect(refused).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(auth.signIn(OWNER, PASSWORD, OWNER_ADDRESS)).resolves.toMatchObject(signedIn);
  });

  it('does not forget a throttled account when thousands of other e-mails fail, and keeps memory bounded', async () => {
    const throttle = throttled({ addressFailures: 1_000_000 });
    const auth = new DashboardAuth(db, systemClock, throttle, BOX);
    await hammer(auth, 6);
    // The account now waits 1 s. Time stands still from here (the limiter's clock and its expiry
    // timers): only eviction, never the wait running out on a slow machine, can let the owner back in.
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    try {
      for (let i = 0; i < 10_050; i++) {
        await auth.signIn(`spray${i}@casino.test`, TOO_LONG, `10.1.${i >> 8}.${i & 255}`).catch(() => undefined);
      }
      await expect(auth.signIn(OWNER, PASSWORD, OWNER_ADDRESS)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    } finally {
      vi.useRealTimers();
    }
    for (const tracked of throttle.trackedCounts()) expect(tracked).toBeLessThanOrEqual(DEFAULT_LOGIN_THROTTLE.maxKeys);
  });
});

describe('dashboard sign-in throttle shared through Redis', () => {
  const redisClients: Redis[] = [];
  afterAll(async () => {
    for (const r of redisClients) await r.quit();
  });

  it('makes a second instance refuse what the first one counted', async () => {
    const keyPrefix = `test-${randomBytes(6).toString('hex')}:`;
    const [one, two] = [0, 1].map(() => {
      const redis = new Redis(REDIS_URL, { keyPrefix });
      redisClients.push(redis);
      return new DashboardAuth(db, systemClock, new LoginThrottle(redis), BOX);
    });
    const codes = await hammer(one!, 6);
    expect(codes).toEqual(Array(6).fill('MISSING_CREDENTIALS'));
    await expect(two!.signIn(OWNER, PASSWORD, OWNER_ADDRESS)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
  });
});

describe('the sign-in page when throttled', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engines: false });
  });
  afterAll(async () => t?.close());

  it('answers 429 with Retry-After instead of checking the password', async () => {
    const page = await request(`${t.baseUrl}/dashboard/login`);
    const cookie = String(page.headers['set-cookie']).split(';')[0]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.body.text())![1]!;
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof request>> | null = null;
    for (let i = 0; i < 7; i++) {
      last = await request(`${t.baseUrl}/dashboard/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        body: new URLSearchParams({ email: OWNER, password: `guess ${i}`, _csrf: csrf, next: '/dashboard' }).toString(),
      });
      statuses.push(last.statusCode);
      await last.body.text();
    }
    expect(statuses.slice(0, 6)).toEqual(Array(6).fill(401));
    expect(statuses[6]).toBe(429);
    expect(Number(last!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });
});
