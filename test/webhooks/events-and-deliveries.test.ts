import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyRequest } from '../../src/signing/request-signature';
import { generateEndpointSecret, serviceSignatureHeader } from '../../src/signing/webhook-signature';
import {
  client,
  eventually,
  startTestApp,
  STORES,
  withSeeds,
  type TestApp,
  type TestOperator,
  shortCrashSeeds,
} from '../support/harness';
import { TestReceiver, type Received } from '../support/webhook-receiver';

const ENV = {
  WEBHOOK_RETRY_SCHEDULE_MS: '0,50,100,150,200',
  WEBHOOK_TIMEOUT_MS: '2000',
  OUTBOX_POLL_MS: '20',
  CRASH_BETTING_WINDOW_MS: '400',
  CRASH_PAUSE_MS: '100',
  STOCK_RACE_BETTING_WINDOW_MS: '400',
  STOCK_RACE_DURATION_MS: '200',
  STOCK_RACE_PAUSE_MS: '100',
};

const header = (r: Received, name: string): string => String(r.headers[name]);

describe.each(STORES)('webhooks on %s', (store) => {
  let t: TestApp;
  const receiver = new TestReceiver();
  let base = '';

  beforeAll(async () => {
    base = await receiver.start();
    // Short Crash rounds (1.18x and 1.26x, a few seconds each) for the first forty: a random seed
    // could run a round for a minute, and the tests wait for betting windows and round ends.
    const seeds = shortCrashSeeds(40);
    t = await startTestApp({ store, env: ENV, beforeStart: withSeeds('crash', seeds) });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  async function endpoint(op: TestOperator, path: string, events: string[], surface: 'A' | 'B' = 'A') {
    const call = client(t.baseUrl, op, surface);
    const prefix = surface === 'A' ? '/api/public/v1' : '/v1';
    const r = await call('POST', `${prefix}/webhook-endpoints`, { url: `${base}${path}`, events });
    expect(r.status).toBe(201);
    return r.body as { endpoint_id: string; secret: string; surface: string };
  }

  it('delivers every event kind, signed so standardwebhooks and the verify operation both accept it', async () => {
    const op = await t.createOperator();
    await t.app.services.operators.updateSettings(op.id, { compliance: { large_stake: 50 } as never });
    const call = client(t.baseUrl, op);
    const ep = await endpoint(op, '/all', ['round.opened', 'round.closed', 'bet.settled', 'compliance.flag']);
    expect(ep.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);

    const placed = await eventually(async () => {
      const r = await call(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: 'p1', amount: 100, auto_cashout: 1.01 },
        { idempotencyKey: `k-${Math.random()}` },
      );
      return r.status === 200 ? r : undefined;
    }, 20_000);
    const betId = placed.body.bet_id as string;

    const seen = await eventually(async () => {
      const got = receiver.on('/all').map((r) => ({ r, body: JSON.parse(r.body) }));
      const kinds = new Set(got.map((g) => g.body.type));
      const settled = got.some((g) => g.body.type === 'bet.settled' && g.body.data.bet_id === betId);
      return settled && ['round.opened', 'round.closed', 'compliance.flag'].every((k) => kinds.has(k))
        ? got
        : undefined;
    }, 15_000);

    const wh = new Webhook(ep.secret);
    for (const { r, body } of seen) {
      expect(Object.keys(body).sort()).toEqual(['created_at', 'data', 'id', 'livemode', 'type']);
      expect(body.livemode).toBe(true);
      expect(header(r, 'webhook-id')).toBe(body.id);
      expect(header(r, 'x-event-type')).toBe(body.type);
      // The unmodified library verifies the real delivery, exactly as received.
      expect(wh.verify(r.body, r.headers as Record<string, string>)).toEqual(body);
      const check = await call('POST', '/api/public/v1/webhooks/verify-signature', {
        endpoint_secret: ep.secret,
        body: r.body,
        signature: header(r, 'x-service-signature'),
      });
      expect(check.status).toBe(200);
      expect(check.body).toMatchObject({
        valid: true,
        timestamp: Number(header(r, 'x-service-signature').split(',')[0]!.slice(2)),
      });
    }
    const flag = seen.find((g) => g.body.type === 'compliance.flag')!.body;
    expect(flag.data).toMatchObject({
      rule: 'large_stake',
      player: 'p1',
      bet_id: betId,
      game: 'crash',
      details: { amount: 100, threshold: 50 },
    });
    const settled = seen.find((g) => g.body.type === 'bet.settled' && g.body.data.bet_id === betId)!.body;
    expect(settled.data).toMatchObject({ bet_id: betId, game: 'crash', amount: 100, player: 'p1' });
    expect(['cashed_out', 'lost']).toContain(settled.data.status);

    // A wrong body or secret is explained, not just refused.
    const r0 = seen[0]!.r;
    const tampered = await call('POST', '/api/public/v1/webhooks/verify-signature', {
      endpoint_secret: ep.secret,
      body: `${r0.body} `,
      signature: header(r0, 'x-service-signature'),
    });
    expect(tampered.body).toMatchObject({ valid: false, reason: 'SIGNATURE_MISMATCH' });
    const malformed = await call('POST', '/api/public/v1/webhooks/verify-signature', {
      endpoint_secret: ep.secret,
      body: r0.body,
      signature: 'v1=abc',
    });
    expect(malformed.body).toMatchObject({ valid: false, reason: 'MALFORMED_HEADER' });

    // The same flag is readable on both surfaces.
    for (const [surface, path] of [
      ['A', '/api/public/v1/compliance/flags?rule=large_stake&player=p1'],
      ['B', '/v1/compliance/flags?rule=large_stake&player=p1'],
    ] as const) {
      const flags = await client(t.baseUrl, op, surface)('GET', path);
      expect(flags.status).toBe(200);
      expect(flags.body.flags).toHaveLength(1);
      expect(flags.body.flags[0]).toMatchObject({ flag_id: flag.data.flag_id, rule: 'large_stake', bet_id: betId });
    }
  });

  it('verifies a delivery body larger than the default request limit, up to the limit of its route', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const secret = generateEndpointSecret();
    // 200 KB: over BODY_LIMIT_BYTES (16 KiB), under what verify-signature accepts (1 MB of body).
    const body = JSON.stringify({ type: 'bet.settled', data: { note: 'x'.repeat(200_000) } });
    const signature = serviceSignatureHeader([secret], Date.now(), body);
    const check = await call('POST', '/api/public/v1/webhooks/verify-signature', {
      endpoint_secret: secret,
      body,
      signature,
    });
    expect(check.status).toBe(200);
    expect(check.body).toMatchObject({ valid: true });
    // Another route keeps the default limit, declared or not.
    const big = await call('POST', '/api/public/v1/webhook-endpoints', { url: `${base}/x`, events: [body] });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ code: 'BODY_TOO_LARGE' });
  });

  it('signs Surface B endpoints with the operator request scheme', async () => {
    const op = await t.createOperator();
    const ep = await endpoint(op, '/surface-b?x=1', ['round.opened'], 'B');
    expect(ep.surface).toBe('B');
    const r = await eventually(async () => receiver.on('/surface-b?x=1')[0], 10_000);
    expect(header(r, 'x-operator-key')).toBe(op.apiKey);
    expect(
      verifyRequest({
        secrets: [op.apiSecret],
        method: 'POST',
        path: '/surface-b?x=1',
        timestamp: header(r, 'x-timestamp'),
        signature: header(r, 'x-signature'),
        body: r.body,
        now: Date.now(),
      }),
    ).toEqual({ ok: true, secretIndex: 0 });
    expect(JSON.parse(r.body).type).toBe('round.opened');
  });

  it('retries a receiver that fails three times and delivers on attempt 4', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const ep = await endpoint(op, '/flaky', ['compliance.flag']);
    receiver.behaviour = (req, nth) =>
      req.path === '/flaky' && nth <= 3 ? { status: 500, body: 'x'.repeat(2000) } : { status: 200, body: 'ok' };
    const test = await call('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/test`);
    expect(test.status).toBe(202);
    const id = test.body.delivery_id as string;
    const done = await eventually(async () => {
      const r = await call('GET', `/api/public/v1/webhook-deliveries/${id}`);
      return r.body.status === 'delivered' ? r.body : undefined;
    });
    expect(done.attempts).toBe(4);
    expect(done.attempt_log.map((a: { status_code: number }) => a.status_code)).toEqual([500, 500, 500, 200]);
    expect(done.attempt_log[0].response_excerpt).toHaveLength(501);
    const got = receiver.on('/flaky');
    expect(got.map((g) => header(g, 'x-delivery-attempt'))).toEqual(['1', '2', '3', '4']);
    expect(new Set(got.map((g) => header(g, 'webhook-id'))).size).toBe(1);
    expect(JSON.parse(got[3]!.body)).toMatchObject({ type: 'webhook.test', data: { endpoint_id: ep.endpoint_id } });
  });

  it('dead-letters after exactly 5 attempts, lists it, and re-sends it on request', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const ep = await endpoint(op, '/down', ['compliance.flag']);
    let up = false;
    receiver.behaviour = (req) => (req.path === '/down' && !up ? { status: 503 } : { status: 204 });
    const test = await call('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/test`);
    const id = test.body.delivery_id as string;
    // Still being retried: left to its own schedule.
    const early = await call('POST', `/api/public/v1/webhook-deliveries/${id}/resend`);
    expect(early.status).toBe(409);
    expect(early.body.code).toBe('ILLEGAL_TRANSITION');
    await eventually(async () => (await call('GET', `/api/public/v1/webhook-deliveries/${id}`)).body.status === 'dead');
    await new Promise((r) => setTimeout(r, 400));
    expect(receiver.on('/down')).toHaveLength(5);
    const dead = await call('GET', `/api/public/v1/webhook-deliveries?status=dead&endpoint_id=${ep.endpoint_id}`);
    expect(dead.body.deliveries.map((d: { delivery_id: string }) => d.delivery_id)).toEqual([id]);
    expect(dead.body.deliveries[0]).toMatchObject({ attempts: 5, last_status_code: 503, last_error: 'HTTP 503' });
    // The page size is checked by the route's schema: 1 to 500.
    for (const limit of ['0', '501', '1000', '-1', '5.5']) {
      const bad = await call('GET', `/api/public/v1/webhook-deliveries?limit=${limit}`);
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({
        error: 'querystring field "limit" must be an integer from 1 to 500',
        code: 'VALIDATION_FAILED',
      });
    }
    for (const limit of ['1', '500']) {
      expect(
        (await call('GET', `/api/public/v1/webhook-deliveries?status=dead&limit=${limit}`)).body.deliveries,
      ).toHaveLength(1);
    }

    up = true;
    const resent = await call('POST', `/api/public/v1/webhook-deliveries/${id}/resend`);
    expect(resent.status).toBe(202);
    expect(resent.body).toMatchObject({ resend_of: id, status: 'pending', attempts: 0 });
    const delivered = await eventually(async () => {
      const r = await call('GET', `/api/public/v1/webhook-deliveries/${resent.body.delivery_id}`);
      return r.body.status === 'delivered' ? r.body : undefined;
    });
    expect(delivered.attempt_log.map((a: { status_code: number }) => a.status_code)).toEqual([204]);
    expect(receiver.on('/down')).toHaveLength(6);
  });

  it('waits at least as long as Retry-After asks', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const ep = await endpoint(op, '/busy', ['compliance.flag']);
    receiver.behaviour = (req, nth) =>
      req.path === '/busy' && nth === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 };
    await call('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/test`);
    await eventually(async () => receiver.on('/busy').length === 2);
    const [first, second] = receiver.on('/busy');
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
  });

  it('publishes the payload schemas in the OpenAPI document and at /webhooks/schema', async () => {
    const op = await t.createOperator();
    const doc = JSON.parse(await (await fetch(`${t.baseUrl}/openapi.json`)).text());
    expect(Object.keys(doc.webhooks).sort()).toEqual([
      'bet.settled',
      'compliance.flag',
      'round.closed',
      'round.opened',
      'webhook.test',
    ]);
    // Each event is a named schema of the document's components, referenced from the webhooks section.
    expect(doc.webhooks['bet.settled'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/BetSettledEvent',
    });
    const settled = doc.components.schemas.BetSettledEvent;
    expect(settled.required).toEqual(['id', 'type', 'created_at', 'livemode', 'data']);
    expect(settled.properties.data).toEqual({ $ref: '#/components/schemas/BetSettledData' });
    expect(doc.components.schemas.BetSettledData.properties.cashout_kind).toBeDefined();
    for (const path of [
      '/api/public/v1/webhook-endpoints',
      '/v1/webhook-endpoints',
      '/api/public/v1/webhooks/verify-signature',
      '/v1/compliance/flags',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    const schema = await client(t.baseUrl, op, 'B')('GET', '/v1/webhooks/schema');
    expect(schema.status).toBe(200);
    expect(schema.body.version).toBe('v1');
    expect(schema.body.$defs['compliance.flag'].properties.data.properties.rule.anyOf).toHaveLength(5);
  });

  it('manages endpoints on both surfaces, scoped to the operator, with overlapping secrets on rotation', async () => {
    const op = await t.createOperator();
    const other = await t.createOperator();
    const a = client(t.baseUrl, op, 'A');
    const b = client(t.baseUrl, op, 'B');
    const ep = await endpoint(op, '/managed', ['compliance.flag']);

    const listed = await b('GET', '/v1/webhook-endpoints');
    expect(listed.status).toBe(200);
    expect(listed.body.endpoints).toEqual([
      expect.objectContaining({
        endpoint_id: ep.endpoint_id,
        surface: 'A',
        events: ['compliance.flag'],
        enabled: true,
      }),
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(ep.secret);
    expect(
      (await client(t.baseUrl, other, 'A')('GET', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}`)).status,
    ).toBe(404);
    expect((await b('GET', `/v1/webhook-endpoints/${ep.endpoint_id}`)).body.url).toBe(`${base}/managed`);

    const patched = await b('PATCH', `/v1/webhook-endpoints/${ep.endpoint_id}`, {
      events: ['bet.settled', 'compliance.flag'],
    });
    expect(patched.body.events).toEqual(['bet.settled', 'compliance.flag']);
    const refused = await a('PATCH', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}`, { events: ['nope'] });
    expect(refused.status).toBe(400);
    const unknown = await a('POST', '/api/public/v1/webhook-endpoints', { url: `${base}/x`, colour: 'red' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('UNKNOWN_FIELD');

    const rotated = await a('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/rotate-secret`, {
      overlap_ms: 60_000,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(ep.secret);
    expect(rotated.body.previous_secret_expires_at).toBeGreaterThan(Date.now());
    receiver.behaviour = () => ({ status: 200 });
    await a('POST', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}/test`);
    const r = await eventually(async () => receiver.on('/managed')[0]);
    expect(header(r, 'x-service-signature').match(/v1=/g)).toHaveLength(2);
    expect(header(r, 'webhook-signature').split(' ')).toHaveLength(2);
    for (const secret of [ep.secret, rotated.body.secret]) {
      expect(new Webhook(secret).verify(r.body, r.headers as Record<string, string>)).toMatchObject({
        type: 'webhook.test',
      });
    }

    const removed = await a('DELETE', `/api/public/v1/webhook-endpoints/${ep.endpoint_id}`);
    expect(removed.status).toBe(204);
    expect((await a('GET', '/api/public/v1/webhook-endpoints')).body.endpoints).toEqual([]);
  });
});
