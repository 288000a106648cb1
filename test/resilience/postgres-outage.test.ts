import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually, PG_URL, startTestApp, type TestApp, type TestOperator } from '../support/harness';
import { send, signB } from '../support/signed-bytes';
import { targetOf, TcpRelay, throughRelay } from '../support/tcp-relay';

/**
 * PostgreSQL goes out of reach while the service runs (a restart, a failover, the network), seen from an
 * operator: every call that needs the store gets 503 with Retry-After in its surface's shape, as the
 * published document says for shared state out of reach, never a 500; the process stays up; and once the
 * store is back, the same money call under the same idempotency key does what it was asked, once.
 * The store is the real server, reached through a relay the test takes down, freezes, and brings back.
 */
const STORE_TIMEOUT_MS = 1_500;

describe('PostgreSQL out of reach while the service runs', () => {
  const relay = new TcpRelay(targetOf(PG_URL, 5432));
  let t: TestApp;
  let op: TestOperator;
  let callA: ReturnType<typeof client>;
  let stopped = false;

  beforeAll(async () => {
    const port = await relay.start();
    t = await startTestApp({
      store: 'postgres',
      // A short statement timeout, so the stalled store below is given up on within the test.
      postgres: { connectVia: throughRelay(PG_URL, port), timeoutMs: STORE_TIMEOUT_MS },
      // One long betting window: the bets below have an open round before, during and after the outage.
      env: { CRASH_BETTING_WINDOW_MS: '120000', ENGINE_LEASE_CHECK_MS: '250' },
    });
    op = await t.createOperator();
    callA = client(t.baseUrl, op);
  }, 60_000);
  afterAll(async () => {
    await relay.start().catch(() => {});
    if (!stopped) await t?.close();
    await relay.kill();
  });

  const placeBet = (key: string, player: string) =>
    callA('POST', '/api/public/v1/place-bet', { external_user_id: player, amount: 150 }, { idempotencyKey: key });
  /** The operator's retry once the store is back: the same key and body, signed afresh, until not a 503. */
  const retryUntilServed = (key: string, player: string) =>
    eventually(
      async () => {
        const r = await placeBet(key, player);
        return r.status === 503 ? undefined : r;
      },
      15_000,
      100,
    );
  const betIdsOf = async (player: string) =>
    (
      await t.app.db.all<{ id: string }>('SELECT id FROM bets WHERE operator_id = ? AND player = ?', [op.id, player])
    ).map((b) => b.id);

  it('answers 503 with Retry-After on both surfaces, stays up, and takes the retried bet once it is back', async () => {
    const before = await placeBet(randomBytes(8).toString('hex'), 'before');
    expect(before.status).toBe(200);

    await relay.kill();
    const key = randomBytes(8).toString('hex');
    const calls = [
      await placeBet(key, 'during'),
      await callA('POST', '/api/public/v1/cashout', { bet_id: before.body.bet_id }, { idempotencyKey: 'c1' }),
      await callA('GET', `/api/public/v1/bets/${before.body.bet_id}`),
    ];
    for (const r of calls) {
      expect(r.status).toBe(503);
      expect(r.headers['retry-after']).toBe('1');
      expect(r.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', error: expect.stringMatching(/retry/) });
      expect(typeof r.body.trace_id).toBe('string');
    }
    const surfaceB = await send(t.baseUrl, signB(op, 'GET', '/v1/settlements', undefined, Date.now()));
    expect(surfaceB.status).toBe(503);
    expect(surfaceB.headers['retry-after']).toBe('1');
    expect(surfaceB.body.error).toBe('SERVICE_UNAVAILABLE');
    // The process lives on: its health probe answers while its store is away.
    expect((await request(`${t.baseUrl}/healthz`)).statusCode).toBe(200);

    await relay.start();
    // The operator's retry: same key, same body, signed afresh.
    const retried = await retryUntilServed(key, 'during');
    expect(retried.status).toBe(200);
    expect(retried.headers['idempotent-replay']).toBeUndefined();
    expect(retried.body).toMatchObject({ external_user_id: 'during', amount: 150 });
    const again = await placeBet(key, 'during');
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replay']).toBe('true');
    expect(again.body).toEqual(retried.body);
    expect(await betIdsOf('during')).toEqual([retried.body.bet_id]);
  }, 60_000);

  it('gives up on a store that stops answering within its timeout (503), and takes the retried bet once', async () => {
    const key = randomBytes(8).toString('hex');
    // Connections stay open and nothing comes back: a stalled network path, a host gone without a reset.
    relay.frozen = true;
    const started = Date.now();
    const stalled = await placeBet(key, 'stalled');
    const waited = Date.now() - started;
    relay.frozen = false;
    expect(stalled.status).toBe(503);
    expect(stalled.headers['retry-after']).toBe('1');
    expect(stalled.body.code).toBe('SERVICE_UNAVAILABLE');
    // The statement's deadline, give or take a wait for a connection of the pool (each bounded alike).
    expect(waited).toBeGreaterThanOrEqual(STORE_TIMEOUT_MS - 100);
    expect(waited).toBeLessThan(3 * STORE_TIMEOUT_MS + 1_000);

    // The connections that stalled were dropped (what passed while frozen is lost, so they could not be
    // trusted again); the retry runs on fresh ones.
    const retried = await retryUntilServed(key, 'stalled');
    expect(retried.status).toBe(200);
    expect(await betIdsOf('stalled')).toEqual([retried.body.bet_id]);

    // The LISTEN connection went through the stall too: stopping does not wait on it for TCP to give up.
    const stopping = Date.now();
    await t.close();
    stopped = true;
    expect(Date.now() - stopping).toBeLessThan(5_000);
  }, 60_000);
});
