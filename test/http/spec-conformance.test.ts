import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/signing/request-signature';
import {
  client,
  eventually,
  KNOWN_CRASH_SEEDS,
  startTestApp,
  withSeeds,
  type SignedResponse,
  type TestApp,
  type TestOperator,
} from '../support/harness';
import { TestReceiver } from '../support/webhook-receiver';
import { followed } from '../support/openapi-refs';

/**
 * The interface spec (shared/seeds/000_b3c62b439d309f36.txt) read table by table, as an operator's
 * integration engineer would check it on day one: over real HTTP, asserting only on what the operator
 * sees (status, body, headers), and on the OpenAPI document agreeing with those answers.
 */

// sha256("surface-b-test-0"): NVDA wins the first Stock Race round at +8.85%.
const SEED_NVDA = '75fed4db566aa59dc746e89f1a940794d6ac7af868d356f9f13608cabc3c62b1';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MS_NOW = (): number => Date.now();

/** Hundredths as the spec's multiplier format: a JSON number with at most two decimals. */
const isMultiplier = (v: unknown): boolean =>
  typeof v === 'number' && Number.isFinite(v) && Math.abs(Math.round(v * 100) - v * 100) < 1e-9;

type JsonSchema = { required?: string[]; properties?: Record<string, unknown> };
type OpenApiResponse = {
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: JsonSchema }>;
};
type OpenApiOperation = { parameters?: { name: string; in: string }[]; responses: Record<string, OpenApiResponse> };
type OpenApiDoc = { paths: Record<string, Record<string, OpenApiOperation>> };

describe('spec conformance, table by table', () => {
  let t: TestApp;
  let op: TestOperator;
  let a: ReturnType<typeof client>;
  let b: ReturnType<typeof client>;
  let doc: OpenApiDoc;
  const wallet = new TestReceiver();
  let walletBase = '';
  /** Every status this file saw each spec operation answer, checked against the document at the end. */
  const seen: Record<string, Set<number>> = {};
  const note = (method: string, path: string, res: SignedResponse): SignedResponse => {
    const key = `${method.toLowerCase()} ${path}`;
    (seen[key] ??= new Set()).add(res.status);
    return res;
  };

  beforeAll(async () => {
    walletBase = await wallet.start();
    t = await startTestApp({
      store: 'sqlite',
      env: {
        OUTBOX_POLL_MS: '20',
        CRASH_BETTING_WINDOW_MS: '3000',
        CRASH_PAUSE_MS: '500',
        CRASH_TICK_MS: '50',
        STOCK_RACE_BETTING_WINDOW_MS: '3000',
        STOCK_RACE_DURATION_MS: '500',
        STOCK_RACE_TICK_MS: '100',
        STOCK_RACE_PAUSE_MS: '500',
      },
      beforeStart: async (db) => {
        // Short known rounds, one after the other, so a loaded machine can always catch an open window.
        await withSeeds(
          'crash',
          Array.from({ length: 30 }, () => KNOWN_CRASH_SEEDS.x118),
        )(db);
        await withSeeds(
          'stock_race',
          Array.from({ length: 30 }, () => SEED_NVDA),
        )(db);
      },
    });
    op = await t.createOperator({ walletUrl: walletBase });
    a = client(t.baseUrl, op, 'A');
    b = client(t.baseUrl, op, 'B');
    const res = await request(`${t.baseUrl}/docs/json`);
    doc = (await res.body.json()) as OpenApiDoc;
  });
  afterAll(async () => {
    await t?.close();
    await wallet.close();
  });

  const placeBet = (body: unknown, key = randomUUID(), extra: Parameters<typeof a>[3] = {}) =>
    a('POST', '/api/public/v1/place-bet', body, { idempotencyKey: key, ...extra }).then((r) =>
      note('POST', '/api/public/v1/place-bet', r),
    );
  const cashout = (body: unknown, key = randomUUID(), extra: Parameters<typeof a>[3] = {}) =>
    a('POST', '/api/public/v1/cashout', body, { idempotencyKey: key, ...extra }).then((r) =>
      note('POST', '/api/public/v1/cashout', r),
    );
  const launch = (body: unknown, extra: Parameters<typeof b>[3] = {}) =>
    b('POST', '/v1/sessions/launch', body, extra).then((r) => note('POST', '/v1/sessions/launch', r));
  const reserve = (body: unknown, extra: Parameters<typeof b>[3] = {}) =>
    b('POST', '/v1/bets/reserve', body, extra).then((r) => note('POST', '/v1/bets/reserve', r));

  /** The endpoint secrets of the webhook endpoints made below, by surface. */
  const hooks: Record<'A' | 'B', string> = { A: '', B: '' };
  const makeEndpoint = async (surface: 'A' | 'B'): Promise<void> => {
    const [call, prefix] = surface === 'A' ? [a, '/api/public/v1'] : [b, '/v1'];
    const events = ['round.opened', 'round.closed', 'bet.settled', 'compliance.flag'];
    const res = await call('POST', `${prefix}/webhook-endpoints`, { url: `${walletBase}/hook-${surface}`, events });
    expect(res.status).toBe(201);
    expect(res.body.events).toEqual(events);
    hooks[surface] = res.body.secret;
  };

  /** The current round of a game once it is open with at least a second of its window left. */
  const openRound = (call: typeof a, path: string) =>
    eventually(
      async () => {
        const r = await call('GET', path);
        return r.body?.status === 'open' && r.body.betting_closes_at - MS_NOW() > 1_000 ? r.body : undefined;
      },
      20_000,
      25,
    );

  describe('Surface A: Bet resource and endpoints', () => {
    let placed: SignedResponse;
    let manual: SignedResponse;

    it('takes a webhook endpoint for every event kind of the Events table', async () => {
      await makeEndpoint('A');
    });

    it('place-bet answers the placed-bet object: UUID id, echoed user and auto_cashout, integers', async () => {
      const round = await openRound(a, '/api/public/v1/rounds/current');
      placed = await placeBet({ external_user_id: 'u'.repeat(120), amount: 1_000_000, auto_cashout: 1.01 });
      expect(placed.status).toBe(200);
      expect(placed.body).toEqual({
        bet_id: expect.stringMatching(UUID),
        external_user_id: 'u'.repeat(120),
        round_number: round.round_number,
        amount: 1_000_000,
        auto_cashout: 1.01,
      });
      const plain = await placeBet({ external_user_id: 'x', amount: 1 });
      expect(plain.status).toBe(200);
      expect(plain.body.auto_cashout).toBeNull();
      const asNull = await placeBet({ external_user_id: 'x', amount: 1, auto_cashout: null });
      expect(asNull.body.auto_cashout).toBeNull();
      manual = await placeBet({ external_user_id: 'cash', amount: 1_000 });
      expect(manual.status).toBe(200);
    });

    it('counts external_user_id in characters, not UTF-16 units: 120 emoji are accepted and echoed', async () => {
      await openRound(a, '/api/public/v1/rounds/current');
      const wide = '\u{1F600}'.repeat(120);
      const res = await placeBet({ external_user_id: wide, amount: 1 });
      expect(res.status).toBe(200);
      expect(res.body.external_user_id).toBe(wide);
      expect((await placeBet({ external_user_id: `${wide}x`, amount: 1 })).status).toBe(400);
    });

    it('refuses each request field outside its type or constraint with a 400 naming the field', async () => {
      const cases: [unknown, string][] = [
        [{ external_user_id: '', amount: 1 }, 'external_user_id'],
        [{ external_user_id: 'u'.repeat(121), amount: 1 }, 'external_user_id'],
        [{ external_user_id: 7, amount: 1 }, 'external_user_id'],
        [{ amount: 1 }, 'external_user_id'],
        [{ external_user_id: 'u', amount: 0 }, 'amount'],
        [{ external_user_id: 'u', amount: 1_000_001 }, 'amount'],
        [{ external_user_id: 'u', amount: 1.5 }, 'amount'],
        [{ external_user_id: 'u', amount: '5' }, 'amount'],
        [{ external_user_id: 'u' }, 'amount'],
        [{ external_user_id: 'u', amount: 1, auto_cashout: 1.0 }, 'auto_cashout'],
        [{ external_user_id: 'u', amount: 1, auto_cashout: '2' }, 'auto_cashout'],
      ];
      for (const [body, field] of cases) {
        const res = await placeBet(body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error).toContain(field);
      }
    });

    it('cashout answers {bet_id, payout (integer), multiplier (number, 2 decimals)} while the round runs', async () => {
      // x118: the round climbs to 1.18x (about 2.8 s), time for a cash-out to land while it runs.
      const round = `/api/public/v1/rounds/${placed.body.round_number}`;
      await eventually(async () => (await a('GET', round)).body?.multiplier >= 1.02, 15_000, 20);
      const res = await cashout({ bet_id: manual.body.bet_id });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['bet_id', 'multiplier', 'payout']);
      expect(res.body.bet_id).toBe(manual.body.bet_id);
      expect(Number.isInteger(res.body.payout)).toBe(true);
      expect(isMultiplier(res.body.multiplier)).toBe(true);
      expect(res.body.payout).toBe(Math.floor((1_000 * Math.round(res.body.multiplier * 100)) / 100));
      // The bet with auto_cashout 1.01 left at its target: no longer active.
      const auto = await cashout({ bet_id: placed.body.bet_id });
      expect(auto.status).toBe(409);
      expect(auto.body.code).toBe('BET_NOT_ACTIVE');
      const unknown = await cashout({ bet_id: randomUUID() });
      expect(unknown.status).toBe(404);
      const notUuid = await cashout({ bet_id: 'bet-1' });
      expect(notUuid.status).toBe(400);
    });
  });

  describe('Surface A: authentication and idempotency tables', () => {
    it('checks x-api-key, x-signature (hex HMAC of METHOD\\nPATH\\nTIMESTAMP\\nBODY), x-timestamp', async () => {
      const body = { external_user_id: 'auth', amount: 1 };
      const raw = JSON.stringify(body);
      const ts = String(MS_NOW());
      const sig = signRequest(op.apiSecret, 'POST', '/api/public/v1/cashout', ts, raw);
      expect(sig).toMatch(/^[0-9a-f]{64}$/);
      const bad = await placeBet(body, randomUUID(), { secret: 'not-the-secret' });
      expect(bad.status).toBe(401);
      const missing = await request(`${t.baseUrl}/api/public/v1/place-bet`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: raw,
      });
      expect(missing.statusCode).toBe(401);
      await missing.body.dump();
      const stale = await placeBet(body, randomUUID(), { timestamp: MS_NOW() - 5 * 60_000 - 1_000 });
      expect(stale.status).toBe(401);
      expect(stale.body.code).toBe('STALE_TIMESTAMP');
    });

    it('replays the same key and same content (any key order) with idempotent-replay: true', async () => {
      const key = randomUUID();
      // Placed, or refused between windows: a refusal is an answer too, stored under its key.
      const first = await placeBet({ external_user_id: 'idem', amount: 10 }, key);
      const again = await a('POST', '/api/public/v1/place-bet', undefined, {
        idempotencyKey: key,
        rawBody: '{ "amount": 10,\n  "external_user_id": "idem" }',
      });
      expect(again.status).toBe(first.status);
      expect(again.headers['idempotent-replay']).toBe('true');
      expect(again.body).toEqual(first.body);
      const other = await placeBet({ external_user_id: 'idem', amount: 11 }, key);
      expect(other.status).toBe(409);
      expect(other.body.error).toBe('idempotency key reused with different body');
    });
  });

  describe('Surface A: webhook deliveries and the verification operation', () => {
    it('signs deliveries with x-service-signature, which verify-signature confirms with the secret', async () => {
      const delivery = await eventually(
        async () => wallet.on('/hook-A').find((r) => JSON.parse(r.body).type === 'bet.settled'),
        20_000,
      );
      const envelope = JSON.parse(delivery.body);
      expect(Object.keys(envelope)).toEqual(expect.arrayContaining(['id', 'type', 'created_at', 'data']));
      const signature = String(delivery.headers['x-service-signature']);
      const verify = (body: string) =>
        a('POST', '/api/public/v1/webhooks/verify-signature', { endpoint_secret: hooks.A, body, signature }).then((r) =>
          note('POST', '/api/public/v1/webhooks/verify-signature', r),
        );
      const ok = await verify(delivery.body);
      expect(ok.status).toBe(200);
      expect(ok.body.valid).toBe(true);
      const tampered = await verify(delivery.body.replace('"bet.settled"', '"round.opened"'));
      expect(tampered.status).toBe(200);
      expect(tampered.body.valid).toBe(false);
    });
  });

  describe('Surface B: session, reserve, settle and errors', () => {
    let sessionId = '';
    let betId = '';

    it('takes a webhook endpoint for every event kind of the Events table', async () => {
      await makeEndpoint('B');
    });

    it('launch answers {session_id, launch_url with a token parameter, expires_at in ms}', async () => {
      const before = MS_NOW();
      const res = await launch({ player_ref: 'player-1', currency: 'EUR', return_url: 'https://op.example/back' });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'launch_url', 'session_id']);
      expect(typeof res.body.session_id).toBe('string');
      expect(new URL(res.body.launch_url).searchParams.get('token')).toMatch(/.+/);
      expect(Number.isInteger(res.body.expires_at)).toBe(true);
      expect(res.body.expires_at).toBeGreaterThan(before);
      expect(res.body.expires_at).toBeLessThan(before + 366 * 24 * 3_600_000);
      sessionId = res.body.session_id;
    });

    it('reserve takes session_id, round_id, selected_stocks, a decimal stake and idempotency_key', async () => {
      const round = await openRound(b, '/v1/rounds/current');
      const body = {
        session_id: sessionId,
        round_id: round.round_id,
        selected_stocks: ['NVDA', 'TSLA'],
        stake: 12.34,
        idempotency_key: randomUUID(),
      };
      const res = await reserve(body);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ stake: 12.34, selected_stocks: ['NVDA', 'TSLA'], session_id: sessionId });
      betId = res.body.bet_id;
      const again = await reserve(body);
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replay']).toBe('true');
      const missingKey = await reserve({ ...body, idempotency_key: undefined });
      expect(missingKey.status).toBe(400);
      expect(missingKey.body.error).toBe('IDEMPOTENCY_KEY_MISSING');
    });

    it('answers an invalid signature with 4xx {error: INVALID_SIGNATURE, message}', async () => {
      const res = await reserve({ session_id: sessionId }, { secret: 'wrong' });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(Object.keys(res.body).sort()).toEqual(['error', 'message']);
      expect(res.body.error).toBe('INVALID_SIGNATURE');
      expect(typeof res.body.message).toBe('string');
    });

    it('settles on the wallet: POST /v1/bets/settle {bet_id, winner, pct, payout, idempotency_key}', async () => {
      const call = await eventually(
        async () => wallet.on('/v1/bets/settle').find((r) => JSON.parse(r.body).bet_id === betId),
        20_000,
      );
      const settle = JSON.parse(call.body);
      expect(Object.keys(settle).sort()).toEqual(['bet_id', 'idempotency_key', 'payout', 'pct', 'winner']);
      expect(settle).toMatchObject({ bet_id: betId, winner: 'NVDA', pct: 8.85 });
      expect(typeof settle.payout).toBe('number');
      expect(settle.payout).toBeGreaterThan(12.34);
      expect(Math.round(settle.payout * 100)).toBeCloseTo(settle.payout * 100, 6);
      expect(typeof settle.idempotency_key).toBe('string');
      expect(call.headers['x-operator-key']).toBe(op.apiKey);
      const ts = String(call.headers['x-timestamp']);
      expect(ts).toMatch(/^\d{13}$/);
      expect(call.headers['x-signature']).toBe(signRequest(op.apiSecret, 'POST', '/v1/bets/settle', ts, call.body));
    });

    it('signs its bet.settled webhook with the request scheme (X-Operator-Key, X-Timestamp, X-Signature)', async () => {
      // Events of both games reach both surfaces' endpoints (docs/decisions.md): pick this bet's.
      const delivery = await eventually(
        async () => wallet.on('/hook-B').find((r) => JSON.parse(r.body).data?.bet_id === betId),
        20_000,
      );
      const envelope = JSON.parse(delivery.body);
      expect(Object.keys(envelope)).toEqual(expect.arrayContaining(['id', 'type', 'created_at', 'data']));
      expect(envelope.type).toBe('bet.settled');
      expect(delivery.headers['x-operator-key']).toBe(op.apiKey);
      const ts = String(delivery.headers['x-timestamp']);
      expect(ts).toMatch(/^\d{13}$/);
      expect(delivery.headers['x-signature']).toBe(signRequest(op.apiSecret, 'POST', '/hook-B', ts, delivery.body));
    });
  });

  describe('the OpenAPI document agrees with the answers', () => {
    it('declares a 415 where the service answers one (a body that is not JSON)', async () => {
      const text = { 'content-type': 'text/plain' };
      const rawBody = '{"external_user_id":"u","amount":1}';
      expect((await placeBet(undefined, randomUUID(), { rawBody, headers: text })).status).toBe(415);
      expect((await cashout(undefined, randomUUID(), { rawBody, headers: text })).status).toBe(415);
      expect((await launch(undefined, { rawBody, headers: text })).status).toBe(415);
      expect((await reserve(undefined, { rawBody, headers: text })).status).toBe(415);
    });

    it('declares every status this file saw on the spec operations', () => {
      const undeclared: string[] = [];
      for (const [key, statuses] of Object.entries(seen)) {
        const [method, path] = key.split(' ') as [string, string];
        const responses = doc.paths[path]?.[method]?.responses ?? {};
        for (const status of statuses) if (!(String(status) in responses)) undeclared.push(`${key} ${status}`);
      }
      expect(undeclared).toEqual([]);
    });

    it('declares the 503 every surface route can answer, and the 415 of every POST', () => {
      for (const [method, path] of [
        ['post', '/api/public/v1/place-bet'],
        ['post', '/api/public/v1/cashout'],
        ['post', '/v1/sessions/launch'],
        ['post', '/v1/bets/reserve'],
        ['post', '/api/public/v1/webhooks/verify-signature'],
      ] as const) {
        expect(Object.keys(doc.paths[path]![method]!.responses), `${method} ${path}`).toContain('503');
      }
      // The same holds for every route behind either surface's authentication, and every POST with a body
      // answers 415 to one that is not JSON.
      const undeclared: string[] = [];
      for (const [path, item] of Object.entries(doc.paths)) {
        if (!path.startsWith('/api/public/v1/') && !path.startsWith('/v1/')) continue;
        for (const [method, operation] of Object.entries(item)) {
          const statuses = Object.keys(operation.responses);
          if (!statuses.includes('503')) undeclared.push(`${method} ${path} 503`);
          const takesBody = method === 'post' || method === 'patch';
          if (takesBody && !statuses.includes('415')) undeclared.push(`${method} ${path} 415`);
        }
      }
      expect(undeclared).toEqual([]);
    });

    it('promises the Errors table shapes: B 4xx {error, message}, B 5xx {error, trace_id}, A 409 {error}', () => {
      const schemaOf = (path: string, status: string): JsonSchema =>
        followed(doc, doc.paths[path]!.post!.responses[status]!.content!['application/json']!.schema);
      for (const status of ['400', '401', '409']) {
        expect(schemaOf('/v1/bets/reserve', status).required, `reserve ${status}`).toEqual(
          expect.arrayContaining(['error', 'message']),
        );
      }
      for (const path of ['/v1/bets/reserve', '/v1/sessions/launch']) {
        expect(schemaOf(path, '500').required, `${path} 500`).toEqual(expect.arrayContaining(['error', 'trace_id']));
        expect(schemaOf(path, '503').required, `${path} 503`).toEqual(expect.arrayContaining(['error', 'trace_id']));
      }
      expect(schemaOf('/api/public/v1/place-bet', '409').required).toContain('error');
      expect(schemaOf('/api/public/v1/place-bet', '500').required).toEqual(expect.arrayContaining(['trace_id']));
    });

    it('declares the idempotent-replay response header the spec puts on a replayed answer', () => {
      for (const [method, path] of [
        ['post', '/api/public/v1/place-bet'],
        ['post', '/api/public/v1/cashout'],
        ['post', '/v1/sessions/launch'],
        ['post', '/v1/bets/reserve'],
      ] as const) {
        const ok = doc.paths[path]![method]!.responses['200']!;
        expect(Object.keys(ok.headers ?? {}), `${method} ${path}`).toContain('idempotent-replay');
      }
      // Every other POST that takes an Idempotency-Key replays the same way (the spec's table covers all
      // Surface A POSTs): its success answer declares the header too.
      const missing: string[] = [];
      for (const [path, item] of Object.entries(doc.paths)) {
        const post = item.post;
        if (!post?.parameters?.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')) continue;
        const success = Object.entries(post.responses).find(([status]) => status.startsWith('2'));
        if (!success || !Object.keys(success[1].headers ?? {}).includes('idempotent-replay')) missing.push(path);
      }
      expect(missing).toEqual([]);
    });
  });
});
