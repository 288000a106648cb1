import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import { Compile } from 'typebox/compile';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { OperatorModes } from '../../src/operators/operator-mode';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import { roundRepository } from '../../src/games/engine/round-repository';
import { signRequest } from '../../src/signing/request-signature';
import type { Database } from '../../src/store/database';
import { recordEvents } from '../../src/webhooks/events';
import { WebhookService } from '../../src/webhooks/service';
import {
  client,
  eventually,
  freshDatabase,
  startTestApp,
  testConfig,
  withSeeds,
  type TestApp,
  shortCrashSeeds,
} from '../support/harness';
import { betSettled } from '../support/webhook-events';
import { type Received, TestReceiver } from '../support/webhook-receiver';

/**
 * Outgoing webhooks as the engineer of an operator receiving them checks them, Svix-style, with
 * nothing but docs/webhooks.md: the verifiers below are written from the docs' text, not the code.
 */

/** docs/webhooks.md, "Verification of x-service-signature by hand", as an integrator copies it. */
function verifyServiceSignatureFromDocs(secret: string, rawBody: string, header: string, now: number): boolean {
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = parts.find(([k]) => k === 't')?.[1];
  if (!t || Math.abs(now - Number(t)) > 300_000) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest();
  return parts.some(([k, v]) => k === 'v1' && v?.length === 64 && timingSafeEqual(expected, Buffer.from(v, 'hex')));
}

/**
 * docs/webhooks.md, Surface A: Standard Webhooks, written from the prose: `webhook-timestamp` in seconds,
 * `webhook-signature` = space-separated `v1,<base64>`, HMAC-SHA256 keyed with the base64-decoded part after
 * `whsec_`, over "<webhook-id>.<webhook-timestamp>.<raw body>".
 */
function verifyStandardFromDocs(secret: string, r: Received, nowMs: number): boolean {
  const id = String(r.headers['webhook-id']);
  const ts = String(r.headers['webhook-timestamp']);
  if (Math.abs(nowMs / 1000 - Number(ts)) > 300) return false;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${r.body}`).digest('base64');
  return String(r.headers['webhook-signature'])
    .split(' ')
    .some((s) => s === `v1,${expected}`);
}

const signatureCount = (r: Received) => (String(r.headers['x-service-signature']).match(/v1=/g) ?? []).length;

/** The webhook service on its own store with a clock the test moves; the dispatcher is drained by hand. */
async function webhooksOnFakeClock(env: Record<string, string>) {
  const fresh = await freshDatabase('sqlite');
  const clock = new FakeClock(Date.now());
  const box = new SecretBox(randomBytes(32));
  const ops = new OperatorService(fresh.db, box, clock, 0);
  const config = testConfig(env);
  const w = new WebhookService({ db: fresh.db, box, clock, logger: pino({ level: 'silent' }), operators: ops, config });
  return { fresh, db: fresh.db as Database, clock, ops, w };
}

describe('signatures across secret rotations, as a receiver sees them (sqlite, injected clock)', () => {
  const receiver = new TestReceiver();
  let base = '';
  let s: Awaited<ReturnType<typeof webhooksOnFakeClock>>;
  beforeAll(async () => {
    base = await receiver.start();
    s = await webhooksOnFakeClock({});
  });
  afterAll(async () => {
    await s?.w.dispatcher.stop();
    await s?.fresh.dispose();
    await receiver.close();
  });

  /** Sends a test event and returns what the receiver got, with which of these secrets verify it. */
  async function deliveredWith(opId: string, endpointId: string, path: string, secrets: string[]) {
    await s.w.sendTestEvent(opId, endpointId);
    await s.w.dispatcher.drain();
    const r = receiver.on(path).at(-1)!;
    const header = String(r.headers['x-service-signature']);
    const now = s.clock.now();
    return {
      count: signatureCount(r),
      service: secrets.map((x) => verifyServiceSignatureFromDocs(x, r.body, header, now)),
      standard: secrets.map((x) => verifyStandardFromDocs(x, r, now)),
    };
  }

  it('the old secret signs alongside the new one until previous_secret_expires_at, and not after', async () => {
    const { ops, w, clock } = s;
    const op = await ops.create({ name: 'rotation' });
    const ep = await w.createEndpoint(op.id, { url: `${base}/rot` });
    const rotated = await w.rotateSecret(op.id, ep.endpoint_id, 60_000);
    expect(rotated.previous_secret_expires_at).toBe(clock.now() + 60_000);
    const both = [ep.secret, rotated.secret];
    expect(await deliveredWith(op.id, ep.endpoint_id, '/rot', both)).toEqual({
      count: 2,
      service: [true, true],
      standard: [true, true],
    });
    clock.advance(60_001);
    expect(await deliveredWith(op.id, ep.endpoint_id, '/rot', both)).toEqual({
      count: 1,
      service: [false, true],
      standard: [false, true],
    });
  });

  it('a second rotation during an overlap does not cut short the overlap the first one promised', async () => {
    // A double click on "rotate" (the dashboard sends no Idempotency-Key), or a retried call without one:
    // the receiver still holds only the original secret, which the first answer said keeps signing for 60 s.
    const { ops, w, clock } = s;
    const op = await ops.create({ name: 'rotation twice' });
    const ep = await w.createEndpoint(op.id, { url: `${base}/rot2` });
    const first = await w.rotateSecret(op.id, ep.endpoint_id, 60_000);
    const firstEnds = first.previous_secret_expires_at!;
    clock.advance(1_000);
    const second = await w.rotateSecret(op.id, ep.endpoint_id, 60_000);
    expect(second.previous_secret_expires_at).toBe(clock.now() + 60_000);
    const all = [ep.secret, first.secret, second.secret];
    expect(await deliveredWith(op.id, ep.endpoint_id, '/rot2', all)).toEqual({
      count: 3,
      service: [true, true, true],
      standard: [true, true, true],
    });
    // Each earlier secret stops at its own end.
    clock.advance(firstEnds - clock.now() + 1);
    expect(await deliveredWith(op.id, ep.endpoint_id, '/rot2', all)).toEqual({
      count: 2,
      service: [false, true, true],
      standard: [false, true, true],
    });
    // overlap_ms 0 (after a leak) stops every older secret at once.
    const third = await w.rotateSecret(op.id, ep.endpoint_id, 0);
    expect(third.previous_secret_expires_at).toBeNull();
    expect(await deliveredWith(op.id, ep.endpoint_id, '/rot2', [...all, third.secret])).toEqual({
      count: 1,
      service: [false, false, false, true],
      standard: [false, false, false, true],
    });
  });
});

describe('retries and re-sends as a receiver sees them (sqlite, injected clock)', () => {
  const receiver = new TestReceiver();
  let base = '';
  let s: Awaited<ReturnType<typeof webhooksOnFakeClock>>;
  const modes = new OperatorModes();
  const SCHEDULE = [0, 10_000, 60_000, 600_000, 3_600_000];
  beforeAll(async () => {
    base = await receiver.start();
    s = await webhooksOnFakeClock({ WEBHOOK_RETRY_SCHEDULE_MS: SCHEDULE.join(','), WEBHOOK_TIMEOUT_MS: '500' });
  });
  afterAll(async () => {
    await s?.w.dispatcher.stop();
    await s?.fresh.dispose();
    await receiver.close();
  });

  async function closedPort(): Promise<number> {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as AddressInfo).port;
    await new Promise<void>((r) => srv.close(() => r()));
    return port;
  }

  it('5xx, Retry-After, a stall and an oversized 2xx fail and back off; the event id never changes', async () => {
    const { ops, w, clock, db } = s;
    const op = await ops.create({ name: 'timing' });
    const ep = await w.createEndpoint(op.id, { url: `${base}/timing`, events: ['bet.settled'] });
    const retryAt = new Date(Math.ceil((clock.now() + 120_000) / 1000) * 1000).toUTCString();
    const answers = [
      { status: 503 },
      { status: 429, headers: { 'retry-after': retryAt } },
      'stall' as const,
      { status: 200, body: 'x'.repeat(70_000) },
      { status: 204 },
    ];
    receiver.behaviour = (r, n) => (r.path === '/timing' ? answers[n - 1]! : { status: 200 });
    const [env] = await db.transaction((tx) => recordEvents(tx, modes, [betSettled(op.id)], clock.now()));
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      await w.dispatcher.drain();
      const [d] = await w.listDeliveries(op.id, { endpointId: ep.endpoint_id });
      if (d!.status !== 'pending') break;
      waits.push(d!.next_attempt_at! - clock.now());
      clock.advance(d!.next_attempt_at! - clock.now());
    }
    // ±10 % around the schedule; Retry-After (an HTTP date 2 min ahead) wins over 60 s.
    expect(waits[0]).toBeGreaterThanOrEqual(9_000);
    expect(waits[0]).toBeLessThanOrEqual(11_000);
    expect(waits[1]).toBeGreaterThanOrEqual(110_000);
    expect(waits[2]).toBeGreaterThanOrEqual(540_000);
    expect(waits[2]).toBeLessThanOrEqual(660_000);
    expect(waits[3]).toBeGreaterThanOrEqual(3_240_000);
    expect(waits[3]).toBeLessThanOrEqual(3_960_000);
    const [done] = await w.listDeliveries(op.id, { endpointId: ep.endpoint_id });
    const log = (await w.getDelivery(op.id, done!.delivery_id)).attempt_log;
    expect(done).toMatchObject({ status: 'delivered', attempts: 5, last_status_code: 204 });
    expect(log.map((a) => a.status_code)).toEqual([503, 429, null, 200, 204]);
    expect(log[2]!.error).toMatch(/^timeout/);
    expect(log[3]!.error).toMatch(/larger than 65536 bytes/);
    const got = receiver.on('/timing');
    expect(got.map((r) => r.headers['x-delivery-attempt'])).toEqual(['1', '2', '3', '4', '5']);
    for (const r of got) {
      expect(r.headers['webhook-id']).toBe(env!.id);
      expect(r.body).toBe(got[0]!.body);
      const header = String(r.headers['x-service-signature']);
      expect(verifyServiceSignatureFromDocs(ep.secret, r.body, header, Number(header.split(',')[0]!.slice(2)))).toBe(
        true,
      );
    }
  });

  it('a refused connection is retried to a dead letter; its re-send is the same event, body and id', async () => {
    const { ops, w, clock, db } = s;
    const op = await ops.create({ name: 'refused' });
    const ep = await w.createEndpoint(op.id, {
      url: `http://127.0.0.1:${await closedPort()}/x`,
      events: ['bet.settled'],
    });
    const [env] = await db.transaction((tx) => recordEvents(tx, modes, [betSettled(op.id)], clock.now()));
    for (let i = 0; i < 6; i++) {
      await w.dispatcher.drain();
      clock.advance(4_000_000);
    }
    const [dead] = await w.listDeliveries(op.id, { status: 'dead' });
    const detail = await w.getDelivery(op.id, dead!.delivery_id);
    expect(detail.attempt_log).toHaveLength(5);
    for (const a of detail.attempt_log) expect(a.error).toMatch(/^ECONNREFUSED/);

    await w.updateEndpoint(op.id, ep.endpoint_id, { url: `${base}/back` });
    receiver.behaviour = () => ({ status: 200 });
    const again = await w.resend(op.id, dead!.delivery_id);
    expect(again).toMatchObject({ event_id: env!.id, resend_of: dead!.delivery_id, status: 'pending' });
    await w.dispatcher.drain();
    const [r] = receiver.on('/back');
    expect(r!.headers).toMatchObject({
      'webhook-id': env!.id,
      'x-delivery-id': again.delivery_id,
      'x-delivery-attempt': '1',
    });
    expect(JSON.parse(r!.body)).toEqual(JSON.parse(JSON.stringify(env)));
    expect(verifyStandardFromDocs(ep.secret, r!, clock.now())).toBe(true);
  });
});

describe('every event kind on both surfaces, checked only with what the docs publish (sqlite)', () => {
  let t: TestApp;
  const receiver = new TestReceiver();
  let base = '';
  beforeAll(async () => {
    base = await receiver.start();
    const seeds = shortCrashSeeds(40);
    t = await startTestApp({
      store: 'sqlite',
      env: {
        WEBHOOK_RETRY_SCHEDULE_MS: '0,50,100,150,200',
        OUTBOX_POLL_MS: '20',
        CRASH_BETTING_WINDOW_MS: '400',
        CRASH_PAUSE_MS: '100',
        STOCK_RACE_BETTING_WINDOW_MS: '600',
        STOCK_RACE_DURATION_MS: '200',
        STOCK_RACE_PAUSE_MS: '100',
      },
      beforeStart: withSeeds('crash', seeds),
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  it('verifies with the docs verifiers and matches the OpenAPI webhooks schema of its type', async () => {
    const op = await t.createOperator();
    await t.app.services.operators.updateSettings(op.id, { compliance: { large_stake: 50 } as never });
    const a = client(t.baseUrl, op, 'A');
    const b = client(t.baseUrl, op, 'B');
    const epA = (await a('POST', '/api/public/v1/webhook-endpoints', { url: `${base}/a` })).body;
    const epB = (await b('POST', '/v1/webhook-endpoints', { url: `${base}/b?q=1` })).body;
    expect((await a('POST', `/api/public/v1/webhook-endpoints/${epA.endpoint_id}/test`)).status).toBe(202);
    await eventually(async () => {
      const body = { external_user_id: 'p1', amount: 100, auto_cashout: 1.01 };
      const r = await a('POST', '/api/public/v1/place-bet', body, { idempotencyKey: `k-${Math.random()}` });
      return r.status === 200 ? r : undefined;
    }, 20_000);
    const session = await b('POST', '/v1/sessions/launch', {
      player_ref: 'race-1',
      currency: 'EUR',
      return_url: 'https://op.example/',
    });
    const round = await eventually(async () => {
      const r = await roundRepository.latest(t.app.db, 'stock_race');
      return r?.status === 'open' ? r : undefined;
    }, 20_000);
    const reserve = await b('POST', '/v1/bets/reserve', {
      session_id: session.body.session_id,
      round_id: round!.id,
      selected_stocks: ['NVDA'],
      stake: 2.55,
      idempotency_key: `r-${Math.random()}`,
    });
    expect(reserve.status).toBe(200);
    const kinds = ['round.opened', 'round.closed', 'bet.settled', 'compliance.flag', 'webhook.test'];
    await eventually(async () => {
      const seen = new Set(receiver.on('/a').map((r) => JSON.parse(r.body).type));
      const raceSettled = receiver
        .on('/b?q=1')
        .some((r) => JSON.parse(r.body).type === 'bet.settled' && JSON.parse(r.body).data.game === 'stock_race');
      return kinds.every((k) => seen.has(k)) && raceSettled;
    }, 20_000);

    const doc = (await (await fetch(`${t.baseUrl}/openapi.json`)).json()) as {
      webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: object }> } } }>;
      components: { schemas: Record<string, object> };
    };
    for (const r of [...receiver.on('/a'), ...receiver.on('/b?q=1')]) {
      const body = JSON.parse(r.body);
      const schema = doc.webhooks[body.type]!.post.requestBody.content['application/json']!.schema;
      // The event's schema is a $ref into the document's components: compiled beside them, it resolves.
      const check = Compile({ allOf: [schema], components: { schemas: doc.components.schemas } } as never);
      expect([...check.Errors(body)].map((e) => `${body.type} ${e.instancePath} ${e.message}`)).toEqual([]);
      expect(r.headers).toMatchObject({ 'webhook-id': body.id, 'x-event-type': body.type, 'x-event-version': 'v1' });
      const secret = r.path === '/a' ? epA.secret : epB.secret;
      expect(verifyServiceSignatureFromDocs(secret, r.body, String(r.headers['x-service-signature']), Date.now())).toBe(
        true,
      );
      if (r.path === '/a') expect(verifyStandardFromDocs(secret, r, Date.now())).toBe(true);
      else {
        // Surface B: the request scheme, keyed with the operator's API secret, over the endpoint's path and query.
        const ts = String(r.headers['x-timestamp']);
        expect(r.headers['x-operator-key']).toBe(op.apiKey);
        expect(r.headers['x-signature']).toBe(signRequest(op.apiSecret, 'POST', '/b?q=1', ts, r.body));
      }
    }
    const race = receiver
      .on('/b?q=1')
      .map((r) => JSON.parse(r.body))
      .find((e) => e.type === 'bet.settled' && e.data.game === 'stock_race');
    expect(race.data).toMatchObject({ amount: 2.55, currency: 'EUR', selections: ['NVDA'] });
  }, 60_000);
});
