import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/signing/request-signature';
import { MAX_ENDPOINTS_PER_OPERATOR } from '../../src/webhooks/endpoints';
import { client, startTestApp, STORES, type TestApp } from '../support/harness';

/**
 * Every POST of the partner API takes an Idempotency-Key (the spec's idempotency table): a retry
 * under the same key, signed afresh, gets the first answer with `idempotent-replay: true` and writes
 * nothing; the same key with another body is 409. Bet commands have their own tests; these are the
 * other writes: webhook endpoints, deliveries and the sandbox.
 */
describe.each(STORES)('Idempotency-Key on the other POSTs, %s', (store) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ store, engines: false });
  });
  afterAll(async () => {
    await t?.close();
  });

  // Each call is signed with its own timestamp: the same bytes twice are a replay, refused as such.
  let clock = Date.now();
  const stamp = () => ++clock;

  it('creates one endpoint per key and replays its answer, secret included, stored sealed', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const body = { url: 'https://hooks.example.com/a', events: ['bet.settled'] };
    const key = `create-${op.id}`;
    const first = await call('POST', '/api/public/v1/webhook-endpoints', body, {
      idempotencyKey: key,
      timestamp: stamp(),
    });
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replay']).toBeUndefined();
    const again = await call('POST', '/api/public/v1/webhook-endpoints', body, {
      idempotencyKey: key,
      timestamp: stamp(),
    });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replay']).toBe('true');
    expect(again.body).toEqual(first.body);
    const listed = await call('GET', '/api/public/v1/webhook-endpoints');
    expect(listed.body.endpoints.map((e: { endpoint_id: string }) => e.endpoint_id)).toEqual([first.body.endpoint_id]);

    const row = await t.app.db.get<{ response: string; status_code: number }>(
      'SELECT response, status_code FROM idempotency_keys WHERE operator_id = ? AND idem_key = ?',
      [op.id, key],
    );
    expect(Number(row!.status_code)).toBe(201);
    expect(row!.response).not.toContain(first.body.secret);
    expect(row!.response.startsWith('v1.')).toBe(true);

    const other = await call(
      'POST',
      '/api/public/v1/webhook-endpoints',
      { ...body, url: 'https://hooks.example.com/b' },
      { idempotencyKey: key, timestamp: stamp() },
    );
    expect(other.status).toBe(409);
    expect(other.body).toEqual({ error: 'idempotency key reused with different body', code: 'IDEMPOTENCY_KEY_REUSED' });

    // Without a key every POST is a new request, as before.
    const plain1 = await call('POST', '/api/public/v1/webhook-endpoints', body, { timestamp: stamp() });
    const plain2 = await call('POST', '/api/public/v1/webhook-endpoints', body, { timestamp: stamp() });
    expect([plain1.status, plain2.status]).toEqual([201, 201]);
    expect(plain1.body.endpoint_id).not.toBe(plain2.body.endpoint_id);
  });

  it('rotates a secret once per key, and the key covers the endpoint in the path', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op, 'B');
    const made = async (path: string) =>
      (
        await call('POST', '/v1/webhook-endpoints', {
          url: `https://hooks.example.com/${path}`,
          events: ['bet.settled'],
        })
      ).body.endpoint_id as string;
    const [a, b] = [await made('a'), await made('b')];
    const key = `rotate-${op.id}`;
    const rotate = (id: string) =>
      call(
        'POST',
        `/v1/webhook-endpoints/${id}/rotate-secret`,
        { overlap_ms: 0 },
        { idempotencyKey: key, timestamp: stamp() },
      );
    const first = await rotate(a);
    expect(first.status).toBe(200);
    const again = await rotate(a);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replay']).toBe('true');
    expect(again.body.secret).toBe(first.body.secret);
    // A second rotation would have moved the first secret into `previous`; the replay changed nothing.
    const now = await call('GET', `/v1/webhook-endpoints/${a}`);
    expect(now.body.updated_at).toBe(first.body.updated_at);
    // Same key and body on another endpoint: another request, refused as a reuse.
    const elsewhere = await rotate(b);
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body).toMatchObject({ error: 'IDEMPOTENCY_KEY_REUSED' });
  });

  it('queues one test delivery per key', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const ep = await call('POST', '/api/public/v1/webhook-endpoints', {
      url: 'https://hooks.example.com/t',
      events: ['bet.settled'],
    });
    const key = `test-${op.id}`;
    const path = `/api/public/v1/webhook-endpoints/${ep.body.endpoint_id}/test`;
    const first = await call('POST', path, undefined, { idempotencyKey: key, timestamp: stamp() });
    const again = await call('POST', path, undefined, { idempotencyKey: key, timestamp: stamp() });
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(again.headers['idempotent-replay']).toBe('true');
    expect(again.body.delivery_id).toBe(first.body.delivery_id);
    const deliveries = await call('GET', `/api/public/v1/webhook-deliveries?endpoint_id=${ep.body.endpoint_id}`);
    expect(deliveries.status).toBe(200);
    expect(deliveries.body.deliveries).toHaveLength(1);
  });

  it('takes no body on test and resend: none or {} is accepted, a stray field is refused', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const ep = await call('POST', '/api/public/v1/webhook-endpoints', {
      url: 'https://hooks.example.com/nobody',
      events: ['bet.settled'],
    });
    const path = `/api/public/v1/webhook-endpoints/${ep.body.endpoint_id}/test`;
    const stray = await call('POST', path, { x: 1 }, { timestamp: stamp() });
    expect(stray.status).toBe(400);
    expect(stray.body).toEqual({
      error: 'unknown field "x": this endpoint does not accept it',
      code: 'UNKNOWN_FIELD',
    });
    const listDeliveries = async () =>
      (await call('GET', `/api/public/v1/webhook-deliveries?endpoint_id=${ep.body.endpoint_id}`)).body.deliveries;
    expect(await listDeliveries()).toHaveLength(0);

    const bare = await call('POST', path, undefined, { timestamp: stamp() });
    const empty = await call('POST', path, {}, { timestamp: stamp() });
    expect([bare.status, empty.status]).toEqual([202, 202]);
    const deliveries = await listDeliveries();
    expect(deliveries).toHaveLength(2);

    const resend = `/api/public/v1/webhook-deliveries/${deliveries[0].delivery_id}/resend`;
    const strayResend = await call('POST', resend, { force: true }, { timestamp: stamp() });
    expect(strayResend.status).toBe(400);
    expect(strayResend.body.code).toBe('UNKNOWN_FIELD');
    expect(await listDeliveries()).toHaveLength(2);
    // Without the stray field the request reaches the service, which refuses a pending delivery.
    const pending = await call('POST', resend, undefined, { timestamp: stamp() });
    expect(pending.status).toBe(409);
    expect(pending.body.code).toBe('ILLEGAL_TRANSITION');
    expect(await listDeliveries()).toHaveLength(2);
  });

  it('rotates a secret on a POST with no body (overlap_ms is optional)', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const ep = await call('POST', '/api/public/v1/webhook-endpoints', {
      url: 'https://hooks.example.com/rotate-bare',
      events: ['bet.settled'],
    });
    const path = `/api/public/v1/webhook-endpoints/${ep.body.endpoint_id}/rotate-secret`;
    const rotated = await call('POST', path, undefined, { timestamp: stamp() });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(ep.body.secret);
    const stray = await call('POST', path, { overlap: 5 }, { timestamp: stamp() });
    expect(stray.status).toBe(400);
    expect(stray.body.code).toBe('UNKNOWN_FIELD');
  });

  it('launches one Stock Race session per key; the stored answer does not hold the player token in clear', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op, 'B');
    const body = { player_ref: 'player-7', currency: 'EUR', return_url: 'https://operator.example/lobby' };
    const key = `launch-${op.id}`;
    const first = await call('POST', '/v1/sessions/launch', body, { idempotencyKey: key, timestamp: stamp() });
    const again = await call('POST', '/v1/sessions/launch', body, { idempotencyKey: key, timestamp: stamp() });
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(first.headers['idempotent-replay']).toBeUndefined();
    expect(again.headers['idempotent-replay']).toBe('true');
    expect(again.body).toEqual(first.body);
    const sessions = async () =>
      Number(
        (await t.app.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM sessions WHERE operator_id = ?', [op.id]))!.n,
      );
    expect(await sessions()).toBe(1);
    const token = new URL(first.body.launch_url).searchParams.get('token')!;
    const row = await t.app.db.get<{ response: string }>(
      'SELECT response FROM idempotency_keys WHERE operator_id = ? AND idem_key = ?',
      [op.id, key],
    );
    expect(row!.response.startsWith('v1.')).toBe(true);
    expect(row!.response).not.toContain(token);

    const other = await call(
      'POST',
      '/v1/sessions/launch',
      { ...body, player_ref: 'player-8' },
      { idempotencyKey: key, timestamp: stamp() },
    );
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ error: 'IDEMPOTENCY_KEY_REUSED' });
    const unkeyed = await call('POST', '/v1/sessions/launch', body, { timestamp: stamp() });
    expect(unkeyed.status).toBe(200);
    expect(await sessions()).toBe(2);
  });

  it('queues sandbox outcomes once per key', async () => {
    const op = await t.createOperator({ mode: 'test' });
    const call = client(t.baseUrl, op);
    const key = `script-${op.id}`;
    const path = '/api/public/v1/sandbox/crash/next-outcomes';
    const first = await call('POST', path, { crash_points: [2.5, 1] }, { idempotencyKey: key, timestamp: stamp() });
    expect(first.status).toBe(200);
    const again = await call('POST', path, { crash_points: [2.5, 1] }, { idempotencyKey: key, timestamp: stamp() });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replay']).toBe('true');
    const queued = await call('GET', path);
    expect(queued.body.pending).toHaveLength(2);
    expect(queued.body.pending).toEqual(first.body.pending);
  });

  it('stores a refusal made inside the write, and does not store one made before it', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    // Refused before any transaction began (no such endpoint): not the key's answer, nothing stored.
    const missing = '/api/public/v1/webhook-endpoints/we_000000000000000000000000/test';
    const refused = await call('POST', missing, undefined, { idempotencyKey: `k-${op.id}`, timestamp: stamp() });
    expect(refused.status).toBe(404);
    const keys = async () =>
      Number(
        (await t.app.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM idempotency_keys WHERE operator_id = ?', [
          op.id,
        ]))!.n,
      );
    expect(await keys()).toBe(0);

    // Refused inside the write (the operator's endpoint limit, checked in the transaction): the refusal
    // is the key's answer, and a retry replays it even after room was made.
    const ids: string[] = [];
    for (let i = 0; i < MAX_ENDPOINTS_PER_OPERATOR; i++) {
      const r = await call('POST', '/api/public/v1/webhook-endpoints', {
        url: `https://hooks.example.com/${i}`,
        events: ['bet.settled'],
      });
      ids.push(r.body.endpoint_id);
    }
    const body = { url: 'https://hooks.example.com/over', events: ['bet.settled'] };
    const key = `over-${op.id}`;
    const over = await call('POST', '/api/public/v1/webhook-endpoints', body, {
      idempotencyKey: key,
      timestamp: stamp(),
    });
    expect(over.status).toBe(400);
    expect(over.body.error).toMatch(/at most 20 webhook endpoints/);
    expect(await keys()).toBe(1);
    expect((await call('DELETE', `/api/public/v1/webhook-endpoints/${ids[0]}`)).status).toBe(204);
    const retried = await call('POST', '/api/public/v1/webhook-endpoints', body, {
      idempotencyKey: key,
      timestamp: stamp(),
    });
    expect(retried.status).toBe(400);
    expect(retried.headers['idempotent-replay']).toBe('true');
    expect(retried.body).toEqual(over.body);
  });

  it('refuses an Idempotency-Key header given twice instead of joining the two', async () => {
    const op = await t.createOperator();
    const path = '/api/public/v1/place-bet';
    const raw = JSON.stringify({ external_user_id: 'p1', amount: 100 });
    const timestamp = String(stamp());
    const res = await request(`${t.baseUrl}${path}`, {
      method: 'POST',
      headers: [
        'x-api-key',
        op.apiKey,
        'x-timestamp',
        timestamp,
        'x-signature',
        signRequest(op.apiSecret, 'POST', path, timestamp, raw),
        'content-type',
        'application/json',
        'idempotency-key',
        'a1',
        'idempotency-key',
        'a2',
      ],
      body: raw,
    });
    expect(res.statusCode).toBe(400);
    expect(await res.body.json()).toEqual({
      error: 'the Idempotency-Key header is given more than once; send it once',
      code: 'VALIDATION_FAILED',
    });
    const bets = await t.app.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM bets WHERE operator_id = ?', [op.id]);
    expect(Number(bets!.n)).toBe(0);
  });
});
