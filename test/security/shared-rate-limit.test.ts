import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedStateWarning } from '../../src/app';
import { client, PG_URL, redisEnv, startTestApp, testConfig, type TestApp } from '../support/harness';

/**
 * Two instances on one PostgreSQL database and one Redis spend from one token bucket per operator:
 * an operator sees the same limit whichever instance its requests reach, not one per instance.
 */

describe('the per-operator rate limit across two instances sharing Redis', () => {
  let first: TestApp;
  let second: TestApp;

  beforeAll(async () => {
    const env = redisEnv();
    first = await startTestApp({ store: 'postgres', engines: false, env });
    second = await startTestApp({ replicaOf: first, engines: false, env });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('allows the burst once in total, not once per instance, and says when to retry', async () => {
    const op = await first.createOperator();
    await first.app.services.operators.updateSettings(op.id, { rate_limit: { refill_per_second: 1, burst: 10 } });
    const one = client(first.baseUrl, op, 'B');
    const two = client(second.baseUrl, op, 'B');

    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const call = i % 2 === 0 ? one : two;
      statuses.push((await call('GET', '/v1/settlements')).status);
    }
    // 10 at once, plus at most one or two refilled while the requests ran on a loaded machine.
    const allowed = statuses.filter((s) => s === 200).length;
    expect(allowed).toBeGreaterThanOrEqual(10);
    expect(allowed).toBeLessThanOrEqual(12);
    expect(statuses.filter((s) => s === 429).length).toBe(20 - allowed);

    const refused = await two('GET', '/v1/settlements');
    expect(refused.status).toBe(429);
    const message = 'rate limit exceeded: 10 burst, 1 requests per second';
    expect(refused.body).toEqual({ error: 'RATE_LIMITED', message });
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['ratelimit-limit']).toBe('10');
  });

  it('keeps operators apart in the shared store', async () => {
    const other = await first.createOperator({ name: 'Other' });
    const answer = await client(second.baseUrl, other, 'B')('GET', '/v1/settlements');
    expect(answer.status).toBe(200);
    expect(answer.headers['ratelimit-remaining']).toBe('499');
  });
});

describe('an instance on PostgreSQL without Redis', () => {
  it('is told at start that its limits are per process', () => {
    const warning = sharedStateWarning(testConfig({ DATABASE_URL: PG_URL }));
    expect(warning).toMatch(/REDIS_URL is not.*set REDIS_URL before starting a second instance/);
    expect(sharedStateWarning(testConfig({ DATABASE_URL: PG_URL, ...redisEnv() }))).toBeNull();
    expect(sharedStateWarning(testConfig({}))).toBeNull();
  });
});

describe('when Redis cannot be reached', () => {
  it('refuses with 503 and Retry-After in the surface shape, never lets the call through unchecked', async () => {
    const t = await startTestApp({ engines: false, env: redisEnv() });
    try {
      const op = await t.createOperator();
      t.app.redis!.disconnect();
      const a = await client(t.baseUrl, op, 'A')('GET', '/api/public/v1/rounds/current');
      expect(a.status).toBe(503);
      // Every 5xx carries the trace id an operator quotes when reporting it: the x-request-id header.
      expect(a.body).toEqual({
        code: 'SERVICE_UNAVAILABLE',
        error: expect.stringContaining('retry shortly'),
        trace_id: a.headers['x-request-id'],
      });
      expect(a.headers['retry-after']).toBe('1');
      const b = await client(t.baseUrl, op, 'B')('GET', '/v1/settlements');
      expect(b.status).toBe(503);
      expect(b.body).toEqual({
        error: 'SERVICE_UNAVAILABLE',
        message: expect.stringContaining('retry shortly'),
        trace_id: b.headers['x-request-id'],
      });
      expect(typeof b.headers['x-request-id']).toBe('string');
    } finally {
      await t.close();
    }
  });
});
