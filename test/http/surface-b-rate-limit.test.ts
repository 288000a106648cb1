import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { client, startTestApp, type SignedResponse, type TestApp, type TestOperator } from '../support/harness';

// The limiter is in memory and reads the injected clock, so one store is enough and time stands
// still between requests: what is measured is the bucket, not the machine's speed.
describe('Surface B rate limit: burst 500, then 200 per second, per operator key', () => {
  let t: TestApp;
  let op: TestOperator;
  let call: ReturnType<typeof client>;
  const clock = new FakeClock(1_800_000_000_000);

  beforeAll(async () => {
    t = await startTestApp({ clock, engines: false });
    op = await t.createOperator();
    call = client(t.baseUrl, op, 'B');
  });
  afterAll(async () => t?.close());

  async function fire(n: number): Promise<SignedResponse[]> {
    const out: SignedResponse[] = [];
    for (let i = 0; i < n; i += 50) {
      const batch = Array.from({ length: Math.min(50, n - i) }, () =>
        call('GET', '/v1/settlements?status=pending', undefined, { timestamp: clock.now() }),
      );
      out.push(...(await Promise.all(batch)));
    }
    return out;
  }

  it('accepts 500 at once, refuses the next with 429 and Retry-After, then refills at 200/s', async () => {
    const burst = await fire(500);
    expect(burst.filter((r) => r.status === 200)).toHaveLength(500);
    expect(burst.at(-1)!.headers['ratelimit-remaining']).toBe('0');

    const refused = await call('GET', '/v1/settlements', undefined, { timestamp: clock.now() });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body).toEqual({
      error: 'RATE_LIMITED',
      message: 'rate limit exceeded: 500 burst, 200 requests per second',
    });

    clock.advance(1_000);
    const second = await fire(201);
    expect(second.filter((r) => r.status === 200)).toHaveLength(200);
    expect(second.filter((r) => r.status === 429)).toHaveLength(1);

    // Half a second refills 100.
    clock.advance(500);
    const half = await fire(101);
    expect(half.filter((r) => r.status === 200)).toHaveLength(100);
    expect(half.filter((r) => r.status === 429)).toHaveLength(1);
  });

  it('keeps operators apart and honours a per-operator override', async () => {
    const other = await t.createOperator({ name: 'Other' });
    await t.app.services.operators.updateSettings(other.id, { rate_limit: { refill_per_second: 5, burst: 10 } });
    const theirs = client(t.baseUrl, other, 'B');
    const results = await Promise.all(
      Array.from({ length: 11 }, () => theirs('GET', '/v1/settlements', undefined, { timestamp: clock.now() })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(10);
    const limited = results.find((r) => r.status === 429)!;
    expect(limited.body.error).toBe('RATE_LIMITED');
    // 1 token at 5 per second: back in 0.2 s, announced as whole seconds.
    expect(limited.headers['retry-after']).toBe('1');
  });
});
