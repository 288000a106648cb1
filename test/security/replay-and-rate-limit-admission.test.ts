import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { AuthFailureLimiter } from '../../src/admission/rate-limit';
import { redisEnv, REDIS_URL, startTestApp, type TestApp } from '../support/harness';
import { send, type Signed, signB } from '../support/signed-bytes';
import { targetOf, TcpRelay, throughRelay } from '../support/tcp-relay';

// Admission (signature, replay record, rate limit, failed-auth throttling) seen from a client:
// statuses, headers and bodies, against real stores and the real Redis.

const B = { key: 'x-operator-key', signature: 'x-signature', timestamp: 'x-timestamp' } as const;

const launchBody = (player: string) => ({ player_ref: player, currency: 'EUR', return_url: 'https://op.example/back' });

async function sessionsOf(t: TestApp, operatorId: string): Promise<number> {
  const row = await t.app.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM sessions WHERE operator_id = ?', [
    operatorId,
  ]);
  return Number(row?.n ?? 0);
}

const opened: TestApp[] = [];
async function track(t: Promise<TestApp>): Promise<TestApp> {
  const app = await t;
  opened.push(app);
  return app;
}
afterEach(async () => {
  // Replicas first: the primary drops the shared schema.
  for (const t of opened.splice(0).reverse()) await t.close().catch(() => {});
});

describe('replays are refused once, everywhere', () => {
  it('the same bytes sent to another instance (upper-cased hex) are 409, one session written', async () => {
    const env = redisEnv();
    const a = await track(startTestApp({ store: 'postgres', env, engines: false }));
    const b = await track(startTestApp({ replicaOf: a, env, engines: false }));
    const op = await a.createOperator();
    const launch = signB(op, 'POST', '/v1/sessions/launch', launchBody('p1'), Date.now());
    expect((await send(a.baseUrl, launch)).status).toBe(200);

    const upper = {
      ...launch,
      headers: { ...launch.headers, [B.signature]: launch.headers[B.signature]!.toUpperCase() },
    };
    const again = await send(b.baseUrl, upper);
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('REQUEST_REPLAYED');
    expect((await send(a.baseUrl, launch)).status).toBe(409);
    expect(await sessionsOf(a, op.id)).toBe(1);
  }, 60_000);

  it('a timestamp at the far edge of the window is recorded for as long as it can pass', async () => {
    const clock = new FakeClock(Date.now());
    const t = await track(startTestApp({ clock, engines: false, env: redisEnv() }));
    const op = await t.createOperator();
    // Five minutes ahead: valid until ten minutes from now.
    const launch = signB(op, 'POST', '/v1/sessions/launch', launchBody('p2'), clock.now() + 300_000);
    expect((await send(t.baseUrl, launch)).status).toBe(200);
    clock.advance(599_000);
    const replay = await send(t.baseUrl, launch);
    expect(replay.status).toBe(409);
    expect(await sessionsOf(t, op.id)).toBe(1);
  }, 30_000);
});

describe('rate limit buckets', () => {
  // The bucket was taken before the replay claim, so a captured request replayed by anyone emptied the
  // real operator's bucket. A seen-once route now claims the signature first.
  it('a refused replay does not spend the operator’s own budget', async () => {
    const t = await track(startTestApp({ engines: false }));
    const op = await t.createOperator({ settings: { rate_limit: { refill_per_second: 0.01, burst: 3 } } });
    const launch = signB(op, 'POST', '/v1/sessions/launch', launchBody('p3'), Date.now());
    expect((await send(t.baseUrl, launch)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await send(t.baseUrl, launch)).status).toBe(409);
    // The operator has used one of its three tokens: its next two calls must pass.
    const own = signB(op, 'GET', '/v1/settlements', undefined, Date.now());
    const answer = await send(t.baseUrl, own);
    expect(answer.status).toBe(200);
    expect(answer.headers['ratelimit-remaining']).toBe('1');
  }, 30_000);

  it('in memory: a wall clock stepped back does not lock the operator out', async () => {
    const clock = new FakeClock(Date.now());
    const t = await track(startTestApp({ clock, engines: false }));
    const op = await t.createOperator({ settings: { rate_limit: { refill_per_second: 1, burst: 5 } } });
    const first = await send(t.baseUrl, signB(op, 'GET', '/v1/settlements', undefined, clock.now()));
    expect(first.status).toBe(200);
    // NTP steps the clock back an hour (a VM resumed with a fast clock, then corrected).
    clock.advance(-3_600_000);
    const after = await send(t.baseUrl, signB(op, 'GET', '/v1/settlements', undefined, clock.now()));
    expect(after.status).toBe(200);
    expect(after.headers['ratelimit-remaining']).toBe('3');
  }, 30_000);

  it('in Redis: an instance whose clock is an hour ahead does not stop the bucket refilling for all', async () => {
    const env = redisEnv();
    const ahead = new FakeClock(Date.now() + 3_600_000);
    const right = new FakeClock(Date.now());
    const a = await track(startTestApp({ store: 'postgres', env, engines: false, clock: ahead }));
    const b = await track(startTestApp({ replicaOf: a, env, engines: false, clock: right }));
    const op = await a.createOperator({ settings: { rate_limit: { refill_per_second: 4, burst: 2 } } });
    const viaA = await send(a.baseUrl, signB(op, 'GET', '/v1/settlements', undefined, ahead.now()));
    expect(viaA.status).toBe(200);
    const get = () => send(b.baseUrl, signB(op, 'GET', '/v1/settlements', undefined, right.now()));
    expect((await get()).status).toBe(200);
    const limited = await get();
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('1');
    // 4 per second: after the Retry-After the operator has tokens again, whatever a peer's clock says.
    await new Promise((r) => setTimeout(r, 1_100));
    right.advance(1_100);
    const refilled = await get();
    expect(refilled.status).toBe(200);
  }, 60_000);
});

describe('when Redis stops answering', () => {
  let relay: TcpRelay | null = null;
  afterAll(async () => relay?.kill());

  it('a stalled Redis gets 503 with Retry-After promptly, and a bad signature still its 401', async () => {
    relay = new TcpRelay(targetOf(REDIS_URL, 6379));
    const url = throughRelay(REDIS_URL, await relay.start());
    const t = await track(startTestApp({ engines: false, env: { REDIS_URL: url, REDIS_KEY_PREFIX: 'stall:' } }));
    const op = await t.createOperator();
    expect((await send(t.baseUrl, signB(op, 'GET', '/v1/settlements', undefined, Date.now()))).status).toBe(200);

    relay.frozen = true;
    const stalled = await send(t.baseUrl, signB(op, 'POST', '/v1/sessions/launch', launchBody('p4'), Date.now()));
    expect(stalled.status).toBe(503);
    expect(stalled.headers['retry-after']).toBe('1');
    expect(stalled.body.error).toBe('SERVICE_UNAVAILABLE');
    expect(stalled.ms).toBeLessThan(3_000);
    expect(await sessionsOf(t, op.id)).toBe(0);

    // The failure count cannot be written either; the caller still gets its answer.
    const forged = signB(op, 'GET', '/v1/settlements', undefined, Date.now());
    forged.headers[B.signature] = '0'.repeat(64);
    const refused = await send(t.baseUrl, forged);
    expect(refused.status).toBe(401);
    expect(refused.ms).toBeLessThan(3_000);
  }, 60_000);

  it('a Redis that went away gets 503 with Retry-After, never an unchecked write', async () => {
    const gone = new TcpRelay(targetOf(REDIS_URL, 6379));
    const url = throughRelay(REDIS_URL, await gone.start());
    const t = await track(startTestApp({ engines: false, env: { REDIS_URL: url, REDIS_KEY_PREFIX: 'gone:' } }));
    const op = await t.createOperator();
    await gone.kill();
    const answer = await send(t.baseUrl, signB(op, 'POST', '/v1/sessions/launch', launchBody('p5'), Date.now()));
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toBe('1');
    expect(answer.ms).toBeLessThan(3_000);
    expect(await sessionsOf(t, op.id)).toBe(0);
  }, 60_000);
});

describe('failed-authentication throttling', () => {
  // The balancer in front is trusted, so the client address is the one it reports.
  const proxied = { TRUST_PROXY_ADDRESSES: 'loopback' };
  const unknownKey = (from: string): Signed => {
    const r = signB({ id: 'x', apiKey: 'ok_not_a_key', apiSecret: 's' }, 'GET', '/v1/settlements', undefined, 0);
    r.headers['x-forwarded-for'] = from;
    return r;
  };
  const from = (r: Signed, address: string): Signed => ({
    ...r,
    headers: { ...r.headers, 'x-forwarded-for': address },
  });

  it('in Redis: blocks the failing address on every instance, with Retry-After, and nobody else', async () => {
    const env = { ...redisEnv(), ...proxied, AUTH_FAILURE_LIMIT: '5', AUTH_FAILURE_WINDOW_S: '60' };
    const a = await track(startTestApp({ engines: false, env }));
    const b = await track(startTestApp({ engines: false, env }));
    const op = await a.createOperator();
    for (let i = 0; i < 5; i++) expect((await send(a.baseUrl, unknownKey('203.0.113.7'))).status).toBe(401);
    const blocked = await send(a.baseUrl, unknownKey('203.0.113.7'));
    expect(blocked.status).toBe(429);
    expect(blocked.body.error).toBe('RATE_LIMITED');
    const wait = Number(blocked.headers['retry-after']);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    // The other instance learns of the block at the address's next failure there.
    expect((await send(b.baseUrl, unknownKey('203.0.113.7'))).status).toBe(401);
    expect((await send(b.baseUrl, unknownKey('203.0.113.7'))).status).toBe(429);
    // The operator, from its own address, is not affected.
    const own = from(signB(op, 'GET', '/v1/settlements', undefined, Date.now()), '198.51.100.1');
    expect((await send(a.baseUrl, own)).status).toBe(200);
  }, 60_000);

  it('an IPv6 client cannot take a fresh budget with each address of its /64', async () => {
    const t = await track(startTestApp({ engines: false, env: { ...proxied, AUTH_FAILURE_LIMIT: '5' } }));
    const answers: number[] = [];
    for (let i = 1; i <= 8; i++)
      answers.push((await send(t.baseUrl, unknownKey(`2001:db8:0:7::${i.toString(16)}`))).status);
    expect(answers).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    // Written in another form, the same /64 is still the same client; a neighbouring /64 is not.
    expect((await send(t.baseUrl, unknownKey('2001:0DB8:0000:0007:ffff::1'))).status).toBe(429);
    expect((await send(t.baseUrl, unknownKey('2001:db8:0:8::1'))).status).toBe(401);
  }, 30_000);

  it('in memory keeps at most 10,000 addresses, as documented', async () => {
    const limiter = new AuthFailureLimiter(null, { points: 30, windowSeconds: 60 });
    for (let i = 0; i < 10_050; i++) await limiter.noteFailure(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    const tracked = (limiter as unknown as { tracked: { size: number } }).tracked;
    expect(tracked.size).toBeLessThanOrEqual(10_000);
  });
});
