import { randomUUID } from 'node:crypto';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { signRequest } from '../../src/signing/request-signature';
import {
  client,
  type SignedResponse,
  startTestApp,
  type TestApp,
  type TestOperator,
  advanceUntil,
} from '../support/harness';
import { TestReceiver } from '../support/webhook-receiver';
import { followed, pointerTarget } from '../support/openapi-refs';

/**
 * The published contract against what the service really answers: every response of a realistic session over
 * both surfaces (Crash, Stock Race, webhook endpoints and deliveries, settlements, sandbox, compliance, fairness,
 * and the error answers 400/401/403/404/409/429) is checked against the operation and response that
 * GET /openapi.json declares for it, with a JSON Schema 2020-12 validator (Ajv): status code, the headers the
 * document names, the media type and the body. test/openapi/lint.test.ts lints the document; this goes further.
 */

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;
/** Headers whose meaning a client can only learn from the document: when sent, the response must declare them. */
const MEANINGFUL_HEADERS = [
  'retry-after',
  'idempotent-replay',
  'deprecation',
  'sunset',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
];

function operations(doc: Json): { method: string; path: string; op: Json }[] {
  const out: { method: string; path: string; op: Json }[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) if (item[method]) out.push({ method, path, op: item[method] });
  }
  return out;
}

/** Every `$ref` of the document, with whether it resolves to something (JSON pointer within the document). */
function unresolvedRefs(doc: Json): string[] {
  const bad: string[] = [];
  const resolve = (ref: string): unknown => pointerTarget(doc, ref);
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(walk);
      return;
    }
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && resolve(v) === undefined) bad.push(v);
      else walk(v);
    }
  };
  walk(doc);
  return bad;
}

/** Checks answers against the document; collects every mismatch and which responses were exercised. */
class ContractChecker {
  readonly problems: string[] = [];
  readonly exercised = new Set<string>();
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly compiled = new WeakMap<object, ReturnType<Ajv2020['compile']>>();
  private readonly templates: { method: string; path: string; re: RegExp; params: number; op: Json }[];

  constructor(readonly doc: Json) {
    addFormats(this.ajv);
    this.templates = operations(doc).map(({ method, path, op }) => ({
      method,
      path,
      op,
      params: (path.match(/\{/g) ?? []).length,
      re: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}$`),
    }));
  }

  /** The documented operation a concrete request reaches (a literal segment beats a parameter). */
  operationOf(method: string, url: string): { path: string; op: Json } | undefined {
    const path = url.split('?')[0]!;
    return this.templates
      .filter((t) => t.method === method.toLowerCase() && t.re.test(path))
      .sort((a, b) => a.params - b.params)[0];
  }

  private validate(schema: object, value: unknown): string | null {
    let fn = this.compiled.get(schema);
    if (!fn) {
      // The schema's `$ref`s point into the document's components: compiled beside them, they resolve.
      fn = this.ajv.compile({ allOf: [schema], components: { schemas: this.doc.components?.schemas ?? {} } });
      this.compiled.set(schema, fn);
    }
    return fn(value) ? null : this.ajv.errorsText(fn.errors, { separator: '; ' });
  }

  check(method: string, url: string, res: SignedResponse): SignedResponse {
    const found = this.operationOf(method, url);
    const where = `${method.toUpperCase()} ${url.split('?')[0]} → ${res.status}`;
    if (!found) {
      this.problems.push(`${where}: no documented operation`);
      return res;
    }
    const responses: Json = found.op.responses ?? {};
    const declared = responses[String(res.status)] ?? responses[`${String(res.status)[0]}XX`] ?? responses.default;
    this.exercised.add(`${method.toUpperCase()} ${found.path} ${res.status}`);
    if (!declared) {
      this.problems.push(`${where}: status not documented (documented: ${Object.keys(responses).join(', ')})`);
      return res;
    }
    const headers: Json = Object.fromEntries(
      Object.entries<Json>(declared.headers ?? {}).map(([name, spec]) => [name, followed(this.doc, spec)]),
    );
    const headerSpec = (name: string): Json | undefined =>
      Object.entries<Json>(headers).find(([k]) => k.toLowerCase() === name)?.[1];
    for (const [name, spec] of Object.entries<Json>(headers)) {
      const value = res.headers[name.toLowerCase()];
      if (value === undefined) {
        if (spec.required) this.problems.push(`${where}: required header ${name} missing`);
        continue;
      }
      const error = spec.schema ? this.validate(spec.schema, Array.isArray(value) ? value[0] : value) : null;
      if (error) this.problems.push(`${where}: header ${name}=${String(value)}: ${error}`);
    }
    for (const name of MEANINGFUL_HEADERS) {
      if (res.headers[name] !== undefined && !headerSpec(name)) {
        this.problems.push(`${where}: sends ${name} but the response does not declare it`);
      }
    }
    const content: Json | undefined = declared.content;
    if (!content) {
      if (res.text !== '') this.problems.push(`${where}: a body the document does not give: ${res.text.slice(0, 80)}`);
      return res;
    }
    const mediaType = String(res.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim();
    const media = content[mediaType];
    if (!media) {
      this.problems.push(`${where}: media type ${mediaType || '(none)'} not among ${Object.keys(content).join(', ')}`);
      return res;
    }
    if (media.schema && mediaType === 'application/json') {
      if (res.body === undefined) this.problems.push(`${where}: body is not JSON: ${res.text.slice(0, 80)}`);
      else {
        const error = this.validate(media.schema, res.body);
        if (error) this.problems.push(`${where}: body ${res.text.slice(0, 200)}: ${error}`);
      }
    }
    return res;
  }
}

/** Opens a Server-Sent Events feed just long enough to read its status and headers. */
async function streamHead(baseUrl: string, path: string, op: TestOperator): Promise<SignedResponse> {
  const ts = String(clockNow());
  const surfaceB = path.startsWith('/v1/');
  const abort = new AbortController();
  const res = await request(`${baseUrl}${path}`, {
    method: 'GET',
    signal: abort.signal,
    headers: surfaceB
      ? {
          'x-operator-key': op.apiKey,
          'x-timestamp': ts,
          'x-signature': signRequest(op.apiSecret, 'GET', path, ts, ''),
        }
      : { 'x-api-key': op.apiKey, 'x-timestamp': ts, 'x-signature': signRequest(op.apiSecret, 'GET', path, ts, '') },
  });
  const headers = res.headers as SignedResponse['headers'];
  abort.abort();
  await res.body.text().catch(() => '');
  // The feed's bytes are not a JSON body: only the status, the headers and the media type are checked.
  return { status: res.statusCode, headers, body: undefined, text: '' };
}

const clock = new FakeClock(Date.now());
const clockNow = (): number => clock.now();

describe('OpenAPI contract: every answer against the published document (SQLite)', () => {
  const receiver = new TestReceiver();
  let t: TestApp;
  let doc: Json;
  let contract: ContractChecker;
  let live: TestOperator;
  let sandbox: TestOperator;
  let limited: TestOperator;
  let receiverUrl: string;

  // Each call is signed afresh (its own timestamp, within the window): the once-only signature rule
  // would refuse a retry of the very same bytes, as it should, and the fake clock stands still between steps.
  let signed = 0;
  /** A signed call at the service's (fake) time whose answer is checked against the document. */
  const caller =
    (op: TestOperator, surface: 'A' | 'B') =>
    async (method: string, path: string, body?: unknown, extra: Parameters<ReturnType<typeof client>>[3] = {}) =>
      contract.check(
        method,
        path,
        await client(t.baseUrl, op, surface)(method, path, body, {
          timestamp: clock.now() - (++signed % 100_000),
          ...extra,
        }),
      );

  const until = <T>(check: () => Promise<T | undefined | false>, stepMs = 250, maxSteps = 400): Promise<T> =>
    advanceUntil(clock, check, stepMs, maxSteps);

  beforeAll(async () => {
    t = await startTestApp({
      clock,
      env: {
        CRASH_TICK_MS: '250',
        STOCK_RACE_TICK_MS: '250',
        WALLET_RETRY_SCHEDULE_MS: '0,1000,1000',
        OUTBOX_POLL_MS: '100',
        PUBLIC_BASE_URL: 'https://bets.example.test',
      },
    });
    receiverUrl = await receiver.start();
    const res = await request(`${t.baseUrl}/openapi.json`);
    doc = (await res.body.json()) as Json;
    contract = new ContractChecker(doc);
    live = await t.createOperator({ name: 'Live casino' });
    sandbox = await t.createOperator({ name: 'Casino (test)', mode: 'test' });
    limited = await t.createOperator({
      name: 'Small tier',
      settings: { rate_limit: { refill_per_second: 0.001, burst: 2 } },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });
  // Each test answers for the mismatches of its own calls.
  beforeEach(() => {
    if (contract) contract.problems.length = 0;
  });

  it('the document: every $ref resolves, every operation has a unique operationId and a 2xx', () => {
    expect(unresolvedRefs(doc)).toEqual([]);
    const ops = operations(doc);
    expect(ops.length).toBeGreaterThan(50);
    const missing = ops.filter(({ op }) => typeof op.operationId !== 'string' || op.operationId === '');
    expect(missing.map(({ method, path }) => `${method.toUpperCase()} ${path}`)).toEqual([]);
    const ids = ops.map(({ op }) => op.operationId as string);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    const no2xx = ops.filter(({ op }) => !Object.keys(op.responses ?? {}).some((s) => /^2/.test(s)));
    expect(no2xx.map(({ method, path }) => `${method.toUpperCase()} ${path}`)).toEqual([]);
  });

  it('the document: each operation declares the errors of its surface, body shapes, Retry-After, rate limits', () => {
    const problems: string[] = [];
    for (const { method, path, op } of operations(doc)) {
      const name = `${method.toUpperCase()} ${path}`;
      const signed = (op.security ?? []).length > 0;
      const hasParams = (op.parameters ?? []).some((p: Json) => p.in === 'path' || p.in === 'query');
      const need = new Set<string>(['500']);
      // Any request can be malformed; a signed one can be unauthenticated, disabled or over its bucket,
      // and the store or Redis can be unreachable (503, retry).
      if (op.requestBody || hasParams || signed) need.add('400');
      if (signed) for (const s of ['401', '403', '429', '503']) need.add(s);
      if (op.requestBody) for (const s of ['413', '415']) need.add(s);
      if (path.includes('{')) need.add('404');
      // A state-changing signed request may be a replay of bytes already accepted (409 REQUEST_REPLAYED).
      if (signed && method !== 'get') need.add('409');
      for (const status of need) {
        const r = op.responses?.[status];
        if (!r) problems.push(`${name}: no ${status}`);
        else if (!r.content?.['application/json']?.schema) problems.push(`${name}: ${status} without a body schema`);
      }
      for (const status of ['429', '503']) {
        const r = op.responses?.[status];
        if (r && !Object.keys(r.headers ?? {}).some((h) => h.toLowerCase() === 'retry-after')) {
          problems.push(`${name}: ${status} does not declare Retry-After`);
        }
      }
      const ok = Object.entries<Json>(op.responses ?? {}).filter(([s]) => /^2/.test(s) && s !== '204');
      for (const [status, r] of ok) if (!r.content) problems.push(`${name}: ${status} gives no body`);
      // A signed answer tells the caller where its bucket stands; a generated client learns the names here.
      const answers = Object.entries<Json>(op.responses ?? {}).filter(([s]) => /^[2]|^429$/.test(s));
      for (const [status, r] of signed ? answers : []) {
        const declared = Object.keys(r.headers ?? {}).map((h) => h.toLowerCase());
        for (const h of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
          if (!declared.includes(h)) problems.push(`${name}: ${status} does not declare ${h}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('a Crash session on Surface A: place, replay, conflict, cash out, reads and the error answers', async () => {
    const A = caller(sandbox, 'A');
    expect(
      (await A('POST', '/api/public/v1/sandbox/timing', { crash: { betting_window_ms: 1000, pause_ms: 100 } })).status,
    ).toBe(200);
    expect((await A('GET', '/api/public/v1/sandbox/timing')).status).toBe(200);
    expect((await A('POST', '/api/public/v1/sandbox/crash/next-outcomes', { crash_points: [1000, 1000] })).status).toBe(
      200,
    );
    expect((await A('GET', '/api/public/v1/sandbox/crash/next-outcomes')).status).toBe(200);

    const key = randomUUID();
    const body = { external_user_id: 'player-1', amount: 1000, auto_cashout: null };
    const placed = await until(async () => {
      await A('GET', '/api/public/v1/rounds/current');
      const r = await A('POST', '/api/public/v1/place-bet', body, { idempotencyKey: key });
      return r.status === 200 ? r : undefined;
    });
    expect(placed.body.livemode).toBe(false);
    const auto = await A(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'p2', amount: 7, auto_cashout: 2.5 },
      {
        idempotencyKey: randomUUID(),
      },
    );
    expect(auto.status).toBe(200);
    // The same key and body: the stored answer, marked as a replay.
    const replay = await A('POST', '/api/public/v1/place-bet', body, { idempotencyKey: key });
    expect([replay.status, replay.headers['idempotent-replay']]).toEqual([200, 'true']);
    // The same key, another body: 409 with the spec's text.
    const conflict = await A('POST', '/api/public/v1/place-bet', { ...body, amount: 2 }, { idempotencyKey: key });
    expect([conflict.status, conflict.body.error]).toEqual([409, 'idempotency key reused with different body']);
    // Validation failures, a missing key, an unknown field.
    expect(
      (await A('POST', '/api/public/v1/place-bet', { ...body, amount: 0 }, { idempotencyKey: randomUUID() })).status,
    ).toBe(400);
    expect((await A('POST', '/api/public/v1/place-bet', body)).status).toBe(400);
    expect(
      (await A('POST', '/api/public/v1/place-bet', { ...body, x: 1 }, { idempotencyKey: randomUUID() })).status,
    ).toBe(400);
    expect(
      (
        await A('POST', '/api/public/v1/place-bet', undefined, {
          rawBody: 'amount=1',
          idempotencyKey: randomUUID(),
          headers: { 'content-type': 'text/plain' },
        })
      ).status,
    ).toBe(415);

    const running = await until(async () => {
      const r = await A('GET', '/api/public/v1/rounds/current');
      return r.body?.status === 'running' && r.body.multiplier > 1 ? r : undefined;
    });
    expect(running.body.round_number).toBe(placed.body.round_number);
    const cashKey = randomUUID();
    const cashed = await A(
      'POST',
      '/api/public/v1/cashout',
      { bet_id: placed.body.bet_id },
      { idempotencyKey: cashKey },
    );
    expect(cashed.status).toBe(200);
    expect(
      (await A('POST', '/api/public/v1/cashout', { bet_id: placed.body.bet_id }, { idempotencyKey: cashKey })).status,
    ).toBe(200);
    // Cashing out a bet no longer active: 409, and a stored refusal replayed under its key.
    const again = randomUUID();
    expect(
      (await A('POST', '/api/public/v1/cashout', { bet_id: placed.body.bet_id }, { idempotencyKey: again })).status,
    ).toBe(409);
    const refusedReplay = await A(
      'POST',
      '/api/public/v1/cashout',
      { bet_id: placed.body.bet_id },
      { idempotencyKey: again },
    );
    expect([refusedReplay.status, refusedReplay.headers['idempotent-replay'], refusedReplay.body.code]).toEqual([
      409,
      'true',
      'BET_NOT_ACTIVE',
    ]);
    expect(
      (await A('POST', '/api/public/v1/cashout', { bet_id: randomUUID() }, { idempotencyKey: randomUUID() })).status,
    ).toBe(404);
    // Betting is closed while the round runs.
    expect(
      (
        await A(
          'POST',
          '/api/public/v1/place-bet',
          { external_user_id: 'late', amount: 5 },
          { idempotencyKey: randomUUID() },
        )
      ).status,
    ).toBe(409);

    expect((await A('GET', `/api/public/v1/bets/${placed.body.bet_id}`)).body.status).toBe('cashed_out');
    expect((await A('GET', `/api/public/v1/bets/${auto.body.bet_id}`)).status).toBe(200);
    expect((await A('GET', `/api/public/v1/rounds/${placed.body.round_number}`)).status).toBe(200);
    expect((await A('GET', '/api/public/v1/rounds/999999')).status).toBe(404);
    expect((await A('GET', '/api/public/v1/rounds/abc')).status).toBe(400);
    expect((await A('GET', `/api/public/v1/bets/${randomUUID()}`)).status).toBe(404);
    expect((await A('GET', '/api/public/v1/bets/not-a-uuid')).status).toBe(400);
    expect((await A('GET', '/api/public/v1/rounds/current?x=1')).status).toBe(400);
    expect((await A('DELETE', '/api/public/v1/sandbox/crash/next-outcomes')).status).toBe(200);
    await until(async () => {
      const r = await A('GET', `/api/public/v1/bets/${auto.body.bet_id}`);
      return r.body.status !== 'active' ? r : undefined;
    });
    expect((await A('GET', `/api/public/v1/rounds/${placed.body.round_number}`)).body.status).toMatch(/closed|running/);
    const feed = await streamHead(t.baseUrl, '/api/public/v1/rounds/stream', sandbox);
    expect(contract.check('GET', '/api/public/v1/rounds/stream', feed).status).toBe(200);

    // Authentication failures: unknown key, bad signature, stale timestamp; a live key on the sandbox.
    const stranger = { id: 'x', apiKey: 'pk_nobody', apiSecret: 'sk_nobody' };
    expect((await caller(stranger, 'A')('GET', '/api/public/v1/rounds/current')).status).toBe(401);
    expect((await A('GET', '/api/public/v1/rounds/current', undefined, { secret: 'wrong' })).status).toBe(401);
    expect(
      (await A('GET', '/api/public/v1/rounds/current', undefined, { timestamp: clock.now() - 600_000 })).status,
    ).toBe(401);
    expect((await caller(live, 'A')('GET', '/api/public/v1/sandbox/timing')).status).toBe(403);
    expect(contract.problems).toEqual([]);
  }, 60_000);

  it('a Stock Race session on Surface B: launch, reserve, replay, reads, settlements, sandbox wallet', async () => {
    const B = caller(sandbox, 'B');
    expect(
      (await B('POST', '/v1/sandbox/timing', { stock_race: { betting_window_ms: 1000, race_ms: 1000, pause_ms: 100 } }))
        .status,
    ).toBe(200);
    expect(
      (await B('POST', '/v1/sandbox/wallet/balances', { player_ref: 'p1', currency: 'EUR', balance: 100 })).status,
    ).toBe(200);
    expect((await B('POST', '/v1/sandbox/stock-race/next-outcomes', { winners: ['NVDA'] })).status).toBe(200);
    expect((await B('GET', '/v1/sandbox/stock-race/next-outcomes')).status).toBe(200);
    expect((await B('POST', '/v1/sandbox/wallet/failures', { mode: 'error_500', count: 1 })).status).toBe(200);
    const launchKey = randomUUID();
    const launchBody = { player_ref: 'p1', currency: 'EUR', return_url: 'https://op.example/' };
    const session = await B('POST', '/v1/sessions/launch', launchBody, { idempotencyKey: launchKey });
    expect(session.status).toBe(200);
    const launchAgain = await B('POST', '/v1/sessions/launch', launchBody, { idempotencyKey: launchKey });
    expect([launchAgain.status, launchAgain.headers['idempotent-replay']]).toEqual([200, 'true']);
    expect((await B('POST', '/v1/sessions/launch', { ...launchBody, currency: 'eur' })).status).toBe(400);

    const reserveKey = randomUUID();
    let reserveBody: Json = {};
    const reserved = await until(async () => {
      const round = await B('GET', '/v1/rounds/current');
      if (round.body?.status !== 'open') return undefined;
      reserveBody = {
        session_id: session.body.session_id,
        round_id: round.body.round_id,
        selected_stocks: ['NVDA'],
        stake: 10.5,
        idempotency_key: reserveKey,
      };
      const r = await B('POST', '/v1/bets/reserve', reserveBody);
      return r.status === 200 ? r : undefined;
    });
    expect(reserved.body).toMatchObject({ livemode: false, stake: 10.5 });
    const sameKey = await B('POST', '/v1/bets/reserve', reserveBody, { timestamp: clock.now() + 1 });
    expect([sameKey.status, sameKey.headers['idempotent-replay']]).toEqual([200, 'true']);
    expect((await B('POST', '/v1/bets/reserve', { ...reserveBody, stake: 11 })).status).toBe(409);
    expect(
      (await B('POST', '/v1/bets/reserve', { ...reserveBody, stake: 1.001, idempotency_key: randomUUID() })).status,
    ).toBe(400);
    const noKey: Json = { ...reserveBody };
    delete noKey.idempotency_key;
    expect((await B('POST', '/v1/bets/reserve', noKey)).status).toBe(400);
    expect(
      (await B('POST', '/v1/bets/reserve', { ...reserveBody, session_id: 'nope', idempotency_key: randomUUID() }))
        .status,
    ).toBe(404);
    expect((await B('GET', `/v1/bets/${reserved.body.bet_id}`)).status).toBe(200);
    expect((await B('GET', `/v1/rounds/${reserved.body.round_id}`)).status).toBe(200);
    expect((await B('GET', '/v1/rounds/no-such-round')).status).toBe(404);
    expect((await B('GET', `/v1/bets/${randomUUID()}`)).status).toBe(404);
    expect((await B('GET', '/v1/sandbox/wallet/balances/p1')).status).toBe(200);

    const settled = await until(async () => {
      const r = await B('GET', `/v1/bets/${reserved.body.bet_id}`);
      return r.body.settlement?.status === 'delivered' ? r : undefined;
    });
    expect(settled.body.status).toBe('won');
    expect((await B('GET', '/v1/settlements')).body.settlements.length).toBeGreaterThan(0);
    expect((await B('GET', '/v1/settlements?status=delivered&limit=5')).status).toBe(200);
    expect((await B('GET', '/v1/settlements?limit=0')).status).toBe(400);
    expect((await B('GET', '/v1/settlements?status=lost')).status).toBe(400);
    expect((await B('GET', `/v1/rounds/${reserved.body.round_id}`)).body.status).toBe('closed');
    expect((await B('DELETE', '/v1/sandbox/stock-race/next-outcomes')).status).toBe(200);
    contract.check('GET', '/v1/rounds/stream', await streamHead(t.baseUrl, '/v1/rounds/stream', sandbox));
    expect((await caller(live, 'B')('GET', '/v1/sandbox/wallet/balances/p1')).status).toBe(403);
    expect((await B('GET', '/v1/rounds/current', undefined, { secret: 'wrong' })).status).toBe(401);
    expect(contract.problems).toEqual([]);
  }, 60_000);

  it('webhook endpoints and deliveries on both surfaces, verify-signature, schema and compliance reads', async () => {
    const hooks = receiverUrl;
    for (const [surface, prefix] of [
      ['A', '/api/public/v1'],
      ['B', '/v1'],
    ] as const) {
      const call = caller(live, surface);
      const key = randomUUID();
      const createBody = { url: `${hooks}/${surface}`, events: ['round.opened', 'bet.settled'] };
      const created = await call('POST', `${prefix}/webhook-endpoints`, createBody, { idempotencyKey: key });
      expect(created.status).toBe(201);
      const createdAgain = await call('POST', `${prefix}/webhook-endpoints`, createBody, { idempotencyKey: key });
      expect([createdAgain.status, createdAgain.headers['idempotent-replay']]).toEqual([201, 'true']);
      const id = created.body.endpoint_id as string;
      expect((await call('POST', `${prefix}/webhook-endpoints`, { url: 'ftp://x' })).status).toBe(400);
      expect((await call('GET', `${prefix}/webhook-endpoints`)).status).toBe(200);
      expect((await call('GET', `${prefix}/webhook-endpoints/${id}`)).status).toBe(200);
      expect((await call('GET', `${prefix}/webhook-endpoints/we_missing`)).status).toBe(404);
      expect((await call('PATCH', `${prefix}/webhook-endpoints/${id}`, { enabled: true })).status).toBe(200);
      expect((await call('PATCH', `${prefix}/webhook-endpoints/${id}`, {})).status).toBe(400);
      expect((await call('POST', `${prefix}/webhook-endpoints/${id}/rotate-secret`, { overlap_ms: 1000 })).status).toBe(
        200,
      );
      const test = await call('POST', `${prefix}/webhook-endpoints/${id}/test`);
      expect(test.status).toBe(202);
      const delivery = test.body.delivery_id as string;
      await until(async () => {
        const r = await call('GET', `${prefix}/webhook-deliveries/${delivery}`);
        return r.body.status === 'delivered' ? r : undefined;
      }, 100);
      expect((await call('GET', `${prefix}/webhook-deliveries?limit=10&endpoint_id=${id}`)).status).toBe(200);
      expect((await call('GET', `${prefix}/webhook-deliveries?limit=0`)).status).toBe(400);
      expect((await call('GET', `${prefix}/webhook-deliveries/dlv_missing`)).status).toBe(404);
      expect((await call('POST', `${prefix}/webhook-deliveries/${delivery}/resend`, {})).status).toBe(202);
      expect((await call('POST', `${prefix}/webhook-deliveries/dlv_missing/resend`)).status).toBe(404);
      const verify = await call('POST', `${prefix}/webhooks/verify-signature`, {
        endpoint_secret: 'whsec_dGVzdA==',
        body: '{}',
        signature: 't=1,v1=00',
      });
      expect([verify.status, verify.body.valid]).toEqual([200, false]);
      expect((await call('GET', `${prefix}/webhooks/schema`)).status).toBe(200);
      expect((await call('GET', `${prefix}/compliance/flags?limit=5`)).status).toBe(200);
      expect((await call('GET', `${prefix}/compliance/flags?limit=abc`)).status).toBe(400);
      expect((await call('DELETE', `${prefix}/webhook-endpoints/${id}`)).status).toBe(204);
      expect((await call('DELETE', `${prefix}/webhook-endpoints/${id}`)).status).toBe(404);
    }
    expect(contract.problems).toEqual([]);
  }, 60_000);

  it('live play: flagged Crash bets, a wallet-settled Stock Race bet, payloads, 413 and replays', async () => {
    const url = receiverUrl;
    const player = await t.createOperator({
      name: 'Live wallet casino',
      walletUrl: `${url}/wallet`,
      settings: { compliance: { large_stake: 1 } },
    });
    const A = caller(player, 'A');
    const B = caller(player, 'B');
    const events = ['round.opened', 'round.closed', 'bet.settled', 'compliance.flag'];
    expect((await A('POST', '/api/public/v1/webhook-endpoints', { url: `${url}/live-a`, events })).status).toBe(201);
    expect((await B('POST', '/v1/webhook-endpoints', { url: `${url}/live-b`, events })).status).toBe(201);
    const crash = await until(async () => {
      const r = await A(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: 'whale', amount: 500, auto_cashout: 1.5 },
        {
          idempotencyKey: randomUUID(),
        },
      );
      return r.status === 200 ? r : undefined;
    });
    expect(crash.body.livemode).toBeUndefined();
    const session = await B('POST', '/v1/sessions/launch', {
      player_ref: 'w1',
      currency: 'EUR',
      return_url: 'https://op.example/',
    });
    const race = await until(async () => {
      const round = await B('GET', '/v1/rounds/current');
      if (round.body?.status !== 'open') return undefined;
      const r = await B('POST', '/v1/bets/reserve', {
        session_id: session.body.session_id,
        round_id: round.body.round_id,
        selected_stocks: ['NVDA', 'AAPL'],
        stake: 2.5,
        idempotency_key: randomUUID(),
      });
      return r.status === 200 ? r : undefined;
    });
    await until(async () => {
      const r = await B('GET', `/v1/bets/${race.body.bet_id}`);
      return r.body.settlement?.status === 'delivered' ? r : undefined;
    });
    await until(async () => {
      const r = await A('GET', `/api/public/v1/bets/${crash.body.bet_id}`);
      return r.body.status !== 'active' ? r : undefined;
    });
    expect((await B('GET', '/v1/settlements?status=delivered')).body.settlements.length).toBe(1);
    expect((await A('GET', '/api/public/v1/compliance/flags')).body.flags.length).toBeGreaterThan(0);
    expect((await B('GET', '/v1/compliance/flags?rule=large_stake&limit=1')).status).toBe(200);
    expect((await A('GET', '/api/public/v1/webhook-deliveries?status=delivered')).status).toBe(200);
    await until(async () => {
      const r = await B('GET', '/v1/webhook-deliveries?status=delivered');
      return r.body.deliveries.length > 3 ? r : undefined;
    }, 100);

    // A body over the limit, answered from the headers; the same signed bytes twice.
    const big = JSON.stringify({ external_user_id: 'x'.repeat(2_000_000), amount: 1 });
    expect(
      (await A('POST', '/api/public/v1/place-bet', undefined, { rawBody: big, idempotencyKey: randomUUID() })).status,
    ).toBe(413);
    expect(
      (await B('POST', '/v1/sessions/launch', undefined, { rawBody: big.replace('external_user_id', 'player_ref') }))
        .status,
    ).toBe(413);
    const once = { timestamp: clock.now() - 1 };
    const launch = { player_ref: 'w2', currency: 'EUR', return_url: 'https://op.example/' };
    expect((await B('POST', '/v1/sessions/launch', launch, once)).status).toBe(200);
    expect((await B('POST', '/v1/sessions/launch', launch, once)).status).toBe(409);
    expect(contract.problems).toEqual([]);

    // What the endpoints received fits the payload schemas the document publishes under `webhooks`.
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const payloadProblems: string[] = [];
    const received = receiver.received.filter((r) => r.path === '/live-a' || r.path === '/live-b');
    expect(new Set(received.map((r) => JSON.parse(r.body).type))).toEqual(new Set(events));
    for (const r of received) {
      const body = JSON.parse(r.body) as Json;
      const schema = doc.webhooks?.[body.type]?.post?.requestBody?.content?.['application/json']?.schema;
      if (!schema) {
        payloadProblems.push(`${body.type}: not in the document`);
        continue;
      }
      const fits = ajv.compile({ allOf: [schema], components: { schemas: doc.components.schemas } });
      if (!(fits(body) as boolean)) payloadProblems.push(`${body.type}: ${ajv.errorsText(fits.errors)}`);
    }
    expect(payloadProblems).toEqual([]);
  }, 60_000);

  it('rate limiting: 429 with Retry-After on both surfaces, as the document declares it', async () => {
    for (const [surface, path] of [
      ['A', '/api/public/v1/webhook-endpoints'],
      ['B', '/v1/webhook-endpoints'],
    ] as const) {
      const call = caller(limited, surface);
      const answers: SignedResponse[] = [];
      for (let i = 0; i < 4; i++) answers.push(await call('GET', path));
      const refused = answers.find((r) => r.status === 429);
      expect(refused?.headers['retry-after']).toMatch(/^[0-9]+$/);
    }
    expect(contract.problems).toEqual([]);
  });

  it('fairness: recomputing and checking rounds, and its error answers', async () => {
    const call = caller(live, 'B');
    const seed = 'b2acd37fbdb5509926ab5d7329704c840f8467266c90019682f3b260a029bdba';
    expect((await call('GET', `/fairness/crash?seed=${seed}`)).status).toBe(200);
    expect((await call('GET', `/fairness/stock-race?seed=${seed}`)).status).toBe(200);
    expect((await call('GET', '/fairness/crash?seed=nope')).status).toBe(400);
    const chains = await call('GET', '/fairness/chains');
    expect(chains.status).toBe(200);
    const chainId = chains.body.chains[0]?.chain_id as string;
    expect((await call('GET', `/fairness/chains/${chainId}`)).status).toBe(200);
    expect((await call('GET', '/fairness/chains/no-such-chain')).status).toBe(404);
    expect(
      (await call('POST', `/fairness/chains/${chainId}/contribution`, { contributor: 'me', value: 'v' })).status,
    ).toBe(409);
    const round = await until(async () => {
      const r = await caller(live, 'A')('GET', '/api/public/v1/rounds/current');
      return r.status === 200 ? r : undefined;
    });
    expect((await call('GET', `/fairness/rounds/${round.body.round_id}`)).status).toBe(200);
    expect((await call('GET', '/fairness/rounds/no-such-round')).status).toBe(404);
    expect(contract.problems).toEqual([]);
  });
});
