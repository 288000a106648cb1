import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceMetrics } from '../../src/observability/metrics';
import type { Database } from '../../src/store/database';
import { client, eventually, startTestApp, STORES, type TestApp, type TestOperator } from '../support/harness';
import { type OtlpSpan, startCollector } from '../support/otlp-collector';
import { parsePrometheusText, type Exposition } from '../support/prometheus-text';
import { TestReceiver } from '../support/webhook-receiver';

/**
 * What an operator's Prometheus and trace backend see at the edges: requests the router refuses
 * before any hook, test-mode work, a store that stops answering, and background work that a
 * request happened to start.
 */

const P = 'rbs_';

async function scrape(t: TestApp): Promise<{ status: number; text: string }> {
  const res = await request(`${t.baseUrl}/metrics`);
  return { status: res.statusCode, text: await res.body.text() };
}

async function metrics(t: TestApp): Promise<Exposition> {
  const r = await scrape(t);
  expect(r.status).toBe(200);
  return parsePrometheusText(r.text);
}

/** Requests counted in the duration histogram, whatever their route and method. */
function requestsCounted(m: Exposition, status: string): number {
  return m.samples
    .filter((s) => s.name === `${P}http_request_duration_seconds_count` && s.labels.status_code === status)
    .reduce((sum, s) => sum + s.value, 0);
}

describe('GET /metrics at the edges', () => {
  let t: TestApp;
  let store: Database;
  const receiver = new TestReceiver();
  let hooks = '';

  beforeAll(async () => {
    hooks = await receiver.start();
    // No outbox workers: the tests below drive the webhook dispatcher by hand.
    t = await startTestApp({
      engines: false,
      env: { WEBHOOK_RETRY_SCHEDULE_MS: '0,50,50' },
      beforeStart: async (db) => void (store = db),
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  // Fastify answers a URL it cannot decode (400) and a path segment over maxParamLength (414) through
  // `frameworkErrors`, on a route context made before any hook was added: they were missing from
  // rbs_http_request_duration_seconds (a malformed-URL flood was invisible), had no x-request-id, and
  // with tracing on their server span was never ended or exported.
  it('counts requests the router refuses before any hook (bad percent-encoding, over-long segment)', async () => {
    const before = await metrics(t);
    const sent: [string, number][] = [
      ['/%zz', 400],
      ['/play/%zz', 400],
      [`/api/public/v1/bets/${'a'.repeat(300)}`, 414],
    ];
    for (const [path, status] of sent) {
      const res = await request(`${t.baseUrl}${path}`);
      await res.body.text();
      expect(res.statusCode).toBe(status);
      // Every answer names its request, these too (the onSend hook that sets it never runs for them).
      expect(res.headers['x-request-id']).toMatch(/^[\w-]{8,}$/);
    }
    await eventually(async () => {
      const m = await metrics(t);
      return requestsCounted(m, '400') - requestsCounted(before, '400') === 2 &&
        requestsCounted(m, '414') - requestsCounted(before, '414') === 1
        ? m
        : undefined;
    }, 2_000);
  });

  /** A delivery whose last attempt's worker died mid-call: the next claim dead-letters it unsent. */
  async function lostLastAttempt(op: TestOperator): Promise<void> {
    const call = client(t.baseUrl, op);
    const ep = await call('POST', '/api/public/v1/webhook-endpoints', {
      url: `${hooks}/lost-${op.id}`,
      events: ['bet.settled'],
    });
    expect(ep.status).toBe(201);
    expect((await call('POST', `/api/public/v1/webhook-endpoints/${ep.body.endpoint_id}/test`)).status).toBe(202);
    const past = Date.now() - 1_000;
    const changed = await store.run(
      `UPDATE webhook_deliveries SET attempts = 3, claimed_until = ?, next_attempt_at = ?
       WHERE endpoint_id = ? AND status = 'pending'`,
      [past, past, ep.body.endpoint_id],
    );
    expect(changed.changes).toBe(1);
    await t.app.services.webhooks.dispatcher.drain();
  }

  it("counts a live delivery dead-lettered after its last attempt's worker was lost", async () => {
    const before = (await metrics(t)).value(`${P}webhook_deliveries_total`, { outcome: 'dead' }) ?? 0;
    await lostLastAttempt(await t.createOperator());
    expect((await metrics(t)).value(`${P}webhook_deliveries_total`, { outcome: 'dead' })).toBe(before + 1);
  });

  // claim() dead-letters exhausted rows; it counted them all as `dead`, without the livemode filter
  // record() applies, so a sandbox operator's lost deliveries raised the live WebhookDeadLetters alert.
  it("leaves a sandbox delivery's lost-attempt dead letter out of the live figures", async () => {
    const before = (await metrics(t)).value(`${P}webhook_deliveries_total`, { outcome: 'dead' }) ?? 0;
    await lostLastAttempt(await t.createOperator({ mode: 'test' }));
    expect(receiver.received).toHaveLength(0);
    expect((await metrics(t)).value(`${P}webhook_deliveries_total`, { outcome: 'dead' }) ?? 0).toBe(before);
  });

  // deliveryBacklog counted the deliveries a disabled operator's events are held in (docs/security.md:
  // held, by design, until it is enabled again, which may be never), so OutboxBacklogAgeing ("events
  // are not leaving") fired five minutes after any disable and stayed firing, with nothing to fix.
  it("leaves a disabled operator's held deliveries out of the backlog the alert watches", async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const ep = await call('POST', '/api/public/v1/webhook-endpoints', {
      url: `${hooks}/held`,
      events: ['bet.settled'],
    });
    expect(ep.status).toBe(201);
    const before = (await metrics(t)).value(`${P}outbox_pending`, { queue: 'webhooks' });
    expect((await call('POST', `/api/public/v1/webhook-endpoints/${ep.body.endpoint_id}/test`)).status).toBe(202);
    expect((await metrics(t)).value(`${P}outbox_pending`, { queue: 'webhooks' })).toBe(before! + 1);
    await t.app.services.operators.setStatus(op.id, 'disabled');
    const m = await metrics(t);
    expect(m.value(`${P}outbox_pending`, { queue: 'webhooks' })).toBe(before);
    expect(m.value(`${P}outbox_oldest_age_seconds`, { queue: 'webhooks' })).toBe(0);
  });
});

describe.each(STORES)('rbs_bets_placed_total and Surface B reservations on %s', (store) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ store, env: { STOCK_RACE_BETTING_WINDOW_MS: '60000' } });
  });
  afterAll(async () => t?.close());

  it('counts a reservation once: not its replay, not a reuse of its key, not a refusal', async () => {
    const call = client(t.baseUrl, await t.createOperator(), 'B');
    const launch = await call(
      'POST',
      '/v1/sessions/launch',
      { player_ref: 'p-1', currency: 'EUR', return_url: 'https://operator.example/lobby' },
      { idempotencyKey: 'launch-1' },
    );
    expect(launch.status).toBe(200);
    const round = await eventually(async () => {
      const r = await call('GET', '/v1/rounds/current');
      return r.body?.status === 'open' ? (r.body.round_id as string) : undefined;
    }, 10_000);
    const reserve = (stake: number, key: string, stocks = ['AAPL', 'MSFT']) =>
      call('POST', '/v1/bets/reserve', {
        session_id: launch.body.session_id,
        round_id: round,
        selected_stocks: stocks,
        stake,
        idempotency_key: key,
      });
    const first = await reserve(5, 'r-1');
    expect(first.status).toBe(200);
    const replay = await reserve(5, 'r-1');
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(first.body);
    expect((await reserve(6, 'r-1')).status).toBeGreaterThanOrEqual(400);
    expect((await reserve(5, 'r-2', ['NOT_A_STOCK'])).status).toBeGreaterThanOrEqual(400);
    const m = await metrics(t);
    expect(m.value(`${P}bets_placed_total`, { game: 'stock_race' })).toBe(1);
    expect(m.value(`${P}bets_placed_total`, { game: 'crash' })).toBe(0);
  });
});

describe('GET /metrics while the store does not answer', () => {
  let t: TestApp;
  let store: Database;

  beforeAll(async () => {
    t = await startTestApp({ engines: false, beforeStart: async (db) => void (store = db) });
  });
  afterAll(async () => t?.close());

  it('still serves the request and process metrics, and leaves the outbox gauges out', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    // No engine runs here: no current round, but an answer from the store.
    expect((await call('GET', '/api/public/v1/rounds/current')).status).toBe(404);
    // No worker either: a test event's delivery waits, and its age is in seconds (not ms, not since 1970).
    const ep = await call('POST', '/api/public/v1/webhook-endpoints', {
      url: 'http://127.0.0.1:9/hook',
      events: ['bet.settled'],
    });
    expect((await call('POST', `/api/public/v1/webhook-endpoints/${ep.body.endpoint_id}/test`)).status).toBe(202);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const up = await metrics(t);
    expect(up.value(`${P}outbox_pending`, { queue: 'webhooks' })).toBe(1);
    const age = up.value(`${P}outbox_oldest_age_seconds`, { queue: 'webhooks' })!;
    expect(age).toBeGreaterThanOrEqual(0.2);
    expect(age).toBeLessThan(30);
    (store as unknown as { raw: { close(): void } }).raw.close(); // every query now throws
    expect((await call('GET', '/api/public/v1/rounds/current')).status).toBe(500);

    // A database outage is when the 5xx rate matters most: the scrape must not fail with it.
    const m = await metrics(t);
    expect(requestsCounted(m, '500')).toBe(1);
    expect(m.types.get(`${P}process_cpu_seconds_total`)).toBe('counter');
    // No stale or invented backlog: the series are absent until the store answers again.
    expect(m.value(`${P}outbox_pending`, { queue: 'webhooks' })).toBeUndefined();
    expect(m.value(`${P}outbox_oldest_age_seconds`, { queue: 'wallet' })).toBeUndefined();
    expect(m.types.get(`${P}outbox_pending`)).toBe('gauge');
  });
});

describe('the /metrics text while the store hangs', () => {
  it('answers within the scrape timeout, without the outbox gauges', async () => {
    // A pool with every connection taken: the backlog read never answers.
    const metrics = new ServiceMetrics({
      outboxBacklog: () => new Promise(() => {}),
      now: () => Date.now(),
      leaders: () => [{ game: 'crash', leader: true }],
    });
    metrics.httpDuration.observe('GET', '/healthz', 200, 0.002);
    const started = Date.now();
    const m = parsePrometheusText(await metrics.registry.metrics());
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(
      m.value(`${P}http_request_duration_seconds_count`, { method: 'GET', route: '/healthz', status_code: '200' }),
    ).toBe(1);
    expect(m.value(`${P}round_engine_leader`, { game: 'crash' })).toBe(1);
    expect(m.samples.filter((s) => s.name.startsWith(`${P}outbox_`))).toEqual([]);
  });
});

describe('the outbox backlog at scrape time', () => {
  // Both outbox gauges read the backlog for themselves: every scrape ran each store aggregate twice.
  it('is read once per queue per scrape, and both gauges show that one read', async () => {
    const reads: string[] = [];
    const metrics = new ServiceMetrics({
      outboxBacklog: async (queue) => {
        reads.push(queue);
        return queue === 'webhooks' ? { pending: 3, oldestAt: 10_000 } : { pending: 0, oldestAt: null };
      },
      now: () => 70_000,
      leaders: () => [],
    });
    const m = parsePrometheusText(await metrics.registry.metrics());
    expect(reads.sort()).toEqual(['wallet', 'webhooks']);
    expect(m.value(`${P}outbox_pending`, { queue: 'webhooks' })).toBe(3);
    expect(m.value(`${P}outbox_oldest_age_seconds`, { queue: 'webhooks' })).toBe(60);
    expect(m.value(`${P}outbox_oldest_age_seconds`, { queue: 'wallet' })).toBe(0);
    // The next scrape reads the store again: nothing is kept between scrapes.
    await metrics.registry.metrics();
    expect(reads).toHaveLength(4);
  });
});

describe('traces of work a request starts but does not wait for', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let t: TestApp;

  beforeAll(async () => {
    collector = await startCollector();
    t = await startTestApp({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        CRASH_BETTING_WINDOW_MS: '300',
        CRASH_PAUSE_MS: '200',
        CRASH_TICK_MS: '50',
        STOCK_RACE_BETTING_WINDOW_MS: '1500',
        STOCK_RACE_DURATION_MS: '300',
        STOCK_RACE_PAUSE_MS: '200',
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await collector?.close();
  });

  it("a sandbox engine started by a request runs its rounds outside that request's trace", async () => {
    // The first call of a test-mode operator starts its sandbox engine, which then runs for as long
    // as the operator plays: its store transactions are not part of that one GET.
    const r = await client(t.baseUrl, await t.createOperator({ mode: 'test' }))('GET', '/api/public/v1/rounds/current');
    expect(r.status).toBe(200);
    const traceId = String(r.headers['x-request-id']);
    const server = await eventually(
      async () => collector.spans.find((s) => s.traceId === traceId && s.name === 'GET /api/public/v1/rounds/current'),
      10_000,
    );
    // The engine's rounds go on (bets close after 300 ms): wait until it has written after the GET.
    // Its first transactions after the GET either still join the GET's trace, or start one of their
    // own with a link to it; wait until some have, and until the engine has written a few times.
    const linked = (s: OtlpSpan) => s.links?.some((l) => l.traceId === traceId) === true;
    const later = await eventually(async () => {
      const after = collector.spans.filter(
        (s) => s.name.startsWith('db.transaction') && BigInt(s.startTimeUnixNano) > BigInt(server.endTimeUnixNano),
      );
      return after.length >= 3 && after.some((s) => s.traceId === traceId || linked(s)) ? after : undefined;
    }, 10_000);
    expect(later.filter((s) => s.traceId === traceId).map((s) => s.name)).toEqual([]);
    // A trace of its own, which names the request that started the work.
    expect(later.filter(linked).every((s) => !s.parentSpanId)).toBe(true);
  });

  it('a wallet settle call is a client span; its traceparent reaches the wallet, no secret rides on it', async () => {
    const wallet = new TestReceiver();
    const base = await wallet.start();
    try {
      const op = await t.createOperator({ walletUrl: `${base}/wallet` });
      const call = client(t.baseUrl, op, 'B');
      const launch = await call('POST', '/v1/sessions/launch', {
        player_ref: 'p-1',
        currency: 'EUR',
        return_url: 'https://operator.example/lobby',
      });
      expect(launch.status).toBe(200);
      await eventually(async () => {
        const current = await call('GET', '/v1/rounds/current');
        if (current.body?.status !== 'open' || current.body.betting_closes_at - Date.now() < 500) return undefined;
        const reserved = await call('POST', '/v1/bets/reserve', {
          session_id: launch.body.session_id,
          round_id: current.body.round_id,
          selected_stocks: ['AAPL'],
          stake: 1,
          idempotency_key: 'traced-reserve',
        });
        return reserved.status === 200 ? reserved : undefined;
      }, 15_000);
      const settle = await eventually(
        async () => wallet.received.find((r) => r.path === '/wallet/v1/bets/settle'),
        15_000,
      );
      const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(settle.headers.traceparent))!;
      const span = await eventually(async () => collector.spans.find((s) => s.spanId === spanId), 10_000);
      expect(span).toMatchObject({ traceId, name: 'wallet settle' });
      // The signature, the API key and the body are the wallet's to see, not the trace backend's.
      const exported = JSON.stringify(span);
      for (const secret of [settle.headers['x-signature'], settle.headers['x-operator-key'], op.apiSecret]) {
        expect(exported).not.toContain(String(secret));
      }
      expect(exported).not.toContain(settle.body);
    } finally {
      await wallet.close();
    }
  });
});
