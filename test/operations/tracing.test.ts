import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/database';
import { client, eventually, startTestApp, type TestApp, type TestOperator } from '../support/harness';
import { type OtlpSpan, startCollector } from '../support/otlp-collector';
import { TestReceiver } from '../support/webhook-receiver';

const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;

const attr = (s: OtlpSpan, key: string): unknown => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};

describe('traces over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let t: TestApp;
  let op: TestOperator;
  let store: Database;

  beforeAll(async () => {
    collector = await startCollector();
    t = await startTestApp({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, CRASH_BETTING_WINDOW_MS: '60000' },
      beforeStart: async (db) => void (store = db),
    });
    op = await t.createOperator();
  });
  afterAll(async () => {
    await t?.close();
    await collector?.close();
  });

  it('a place-bet is one trace: the HTTP server span and the store transaction under it', async () => {
    const call = client(t.baseUrl, op);
    await eventually(async () => (await call('GET', '/api/public/v1/rounds/current')).body?.status === 'open');
    const placed = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'alice', amount: 100 },
      { idempotencyKey: 'traced-1' },
    );
    expect(placed.status).toBe(200);
    const traceId = String(placed.headers['x-request-id']);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);

    const server = await eventually(
      async () => collector.spans.find((s) => s.traceId === traceId && s.name === 'POST /api/public/v1/place-bet'),
      10_000,
    );
    expect(server.kind).toBe(SPAN_KIND_SERVER);
    expect(attr(server, 'http.route')).toBe('/api/public/v1/place-bet');
    expect(Number(attr(server, 'http.response.status_code'))).toBe(200);
    const store = await eventually(
      async () => collector.spans.find((s) => s.traceId === traceId && s.name.startsWith('db.transaction')),
      10_000,
    );
    expect(store.parentSpanId).toBe(server.spanId);
    expect(store.kind).toBe(SPAN_KIND_CLIENT);
    expect(attr(store, 'db.system.name')).toBe('sqlite');
    expect([...collector.contentTypes]).toEqual(['application/json']);
  });

  it("joins the caller's trace when the request carries a W3C traceparent", async () => {
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const r = await client(t.baseUrl, op)('GET', '/api/public/v1/rounds/current', undefined, {
      headers: { traceparent: `00-${callerTrace}-00f067aa0ba902b7-01` },
    });
    expect(r.status).toBe(200);
    expect(r.headers['x-request-id']).toBe(callerTrace);
    const server = await eventually(
      async () => collector.spans.find((s) => s.traceId === callerTrace && s.kind === SPAN_KIND_SERVER),
      10_000,
    );
    expect(server.parentSpanId).toBe('00f067aa0ba902b7');
  });

  it('a webhook delivery is a client span, and its traceparent reaches the endpoint', async () => {
    const receiver = new TestReceiver();
    const base = await receiver.start();
    try {
      const call = client(t.baseUrl, op);
      const ep = await call('POST', '/api/public/v1/webhook-endpoints', {
        url: `${base}/hook`,
        events: ['bet.settled'],
      });
      expect(ep.status).toBe(201);
      expect((await call('POST', `/api/public/v1/webhook-endpoints/${ep.body.endpoint_id}/test`)).status).toBe(202);
      const got = await eventually(async () => receiver.received.find((r) => r.path === '/hook'), 10_000);
      const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(got.headers.traceparent))!;
      const span = await eventually(async () => collector.spans.find((s) => s.spanId === spanId), 10_000);
      expect(span).toMatchObject({ traceId, name: 'webhook delivery', kind: SPAN_KIND_CLIENT });
      expect(Number(attr(span, 'http.response.status_code'))).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  it("a 500's trace_id is the id of the trace that recorded the failure", async () => {
    (store as unknown as { raw: { close(): void } }).raw.close(); // every query now throws
    const r = await client(t.baseUrl, op)('GET', '/api/public/v1/rounds/current');
    expect(r.status).toBe(500);
    expect(r.body).toEqual({
      error: 'internal error',
      code: 'INTERNAL',
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    const server = await eventually(
      async () => collector.spans.find((s) => s.traceId === r.body.trace_id && s.kind === SPAN_KIND_SERVER),
      10_000,
    );
    expect(server.name).toBe('GET /api/public/v1/rounds/current');
    expect(server.status?.code).toBe(2); // ERROR
  });
});
