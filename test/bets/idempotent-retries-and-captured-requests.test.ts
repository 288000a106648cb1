import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { signRequest } from '../../src/signing/request-signature';
import { client, eventually, startTestApp, STORES, type TestApp, type TestOperator } from '../support/harness';

/**
 * Edges of idempotency and replay protection, seen by an operator's retrying client and by an
 * attacker holding captured signed requests (docs/decisions.md "Idempotency (both surfaces)" and
 * "Replayed signed requests"; docs/security.md "Signing and replay").
 */

type Call = ReturnType<typeof client>;

async function betsOf(t: TestApp, operatorId: string): Promise<number> {
  const row = await t.app.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM bets WHERE operator_id = ?', [
    operatorId,
  ]);
  return Number(row?.n ?? 0);
}

async function bettingOpen(call: Call): Promise<number> {
  return eventually(async () => {
    const r = await call('GET', '/api/public/v1/rounds/current');
    return r.body?.status === 'open' ? (r.body.round_number as number) : undefined;
  }, 15_000);
}

/** Sends exactly these bytes and headers, as a captured request is sent again. */
async function resend(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; headers: Record<string, unknown>; text: string; body: any }> {
  const res = await request(`${baseUrl}${path}`, { method: 'POST', headers, body });
  const text = await res.body.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, body: parsed };
}

/** Surface A headers of a place-bet signed at `timestamp` over `raw`. */
function signedA(op: TestOperator, path: string, timestamp: number, raw: string, key: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-api-key': op.apiKey,
    'x-timestamp': String(timestamp),
    'x-signature': signRequest(op.apiSecret, 'POST', path, String(timestamp), raw),
    'idempotency-key': key,
  };
}

describe.each(STORES)('idempotent retries and captured requests, %s', (store) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      store,
      env: { CRASH_BETTING_WINDOW_MS: '60000', STOCK_RACE_BETTING_WINDOW_MS: '60000' },
    });
  });
  afterAll(async () => t?.close());

  it('a retry signed afresh, captured and replayed under a new key, places no second bet', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const path = '/api/public/v1/place-bet';
    const raw = JSON.stringify({ external_user_id: 'eve-target', amount: 400 });
    const ts = Date.now();
    const first = await resend(t.baseUrl, path, signedA(op, path, ts - 10, raw, 'k-orig'), raw);
    expect(first.status).toBe(200);
    // The operator's client retries (its first answer got lost), signed afresh as docs/security.md says.
    const retryHeaders = signedA(op, path, ts, raw, 'k-orig');
    const retry = await resend(t.baseUrl, path, retryHeaders, raw);
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replay']).toBe('true');
    expect(retry.text).toBe(first.text);
    // An attacker who captured the retry sends its bytes again under a key of its own.
    const forged = await resend(t.baseUrl, path, { ...retryHeaders, 'idempotency-key': 'k-forged' }, raw);
    expect(forged.status).toBe(409);
    expect(forged.body.code).toBe('REQUEST_REPLAYED');
    expect(await betsOf(t, op.id)).toBe(1);
  });

  it('a cash-out retry signed afresh, replayed under a new key, is refused as a replay', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const placed = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'u', amount: 300 },
      {
        idempotencyKey: 'bet',
      },
    );
    expect(placed.status).toBe(200);
    const path = '/api/public/v1/cashout';
    const raw = JSON.stringify({ bet_id: placed.body.bet_id });
    const ts = Date.now();
    // Betting is open: the cash-out is refused and the refusal stored; the retry gets it again.
    const first = await resend(t.baseUrl, path, signedA(op, path, ts - 10, raw, 'co'), raw);
    expect(first.body.code).toBe('ROUND_NOT_RUNNING');
    const retryHeaders = signedA(op, path, ts, raw, 'co');
    const retry = await resend(t.baseUrl, path, retryHeaders, raw);
    expect(retry.status).toBe(409);
    expect(retry.headers['idempotent-replay']).toBe('true');
    expect(retry.text).toBe(first.text);
    // Captured, the retry could otherwise cash the bet out whenever the attacker likes.
    const forged = await resend(t.baseUrl, path, { ...retryHeaders, 'idempotency-key': 'co-forged' }, raw);
    expect(forged.status).toBe(409);
    expect(forged.body.code).toBe('REQUEST_REPLAYED');
  });

  it('20 retries at once under one key, each signed afresh: one bet, one answer, 19 marked replays', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const path = '/api/public/v1/place-bet';
    const raw = JSON.stringify({ external_user_id: 'burst', amount: 250, auto_cashout: 2 });
    const ts = Date.now();
    const sent = Array.from({ length: 20 }, (_, i) => signedA(op, path, ts - i, raw, 'burst-key'));
    const answers = await Promise.all(sent.map((headers) => resend(t.baseUrl, path, headers, raw)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers.filter((a) => a.headers['idempotent-replay'] === undefined)).toHaveLength(1);
    expect(answers.filter((a) => a.headers['idempotent-replay'] === 'true')).toHaveLength(19);
    expect(await betsOf(t, op.id)).toBe(1);
    // None of the 20 signatures opens a second bet under another key.
    for (const i of [0, 7, 19]) {
      const forged = await resend(t.baseUrl, path, { ...sent[i]!, 'idempotency-key': `burst-forged-${i}` }, raw);
      expect(forged.body.code).toBe('REQUEST_REPLAYED');
    }
    expect(await betsOf(t, op.id)).toBe(1);
  });

  it('20 copies of the same signed bytes at once: one bet, the same body for all', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const path = '/api/public/v1/place-bet';
    const raw = JSON.stringify({ external_user_id: 'copies', amount: 260 });
    const headers = signedA(op, path, Date.now(), raw, 'copies-key');
    const answers = await Promise.all(Array.from({ length: 20 }, () => resend(t.baseUrl, path, headers, raw)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers.filter((a) => a.headers['idempotent-replay'] === 'true')).toHaveLength(19);
    expect(await betsOf(t, op.id)).toBe(1);
  });

  it('hashes the body canonically: key order, spacing and 1000 / 1000.0 / 1e3 are the same request', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const send = (rawBody: string) =>
      call('POST', '/api/public/v1/place-bet', undefined, { rawBody, idempotencyKey: 'canon' });
    const first = await send('{"external_user_id":"c","amount":1000,"auto_cashout":2.5}');
    expect(first.status).toBe(200);
    for (const rawBody of [
      '{ "auto_cashout" : 2.50 , "amount" : 1000.0 , "external_user_id" : "c" }',
      '{"amount":1e3,"external_user_id":"\u0063","auto_cashout":25e-1}',
      '\n{"external_user_id":"c",\t"amount":1000E0,"auto_cashout":2.5}\n',
    ]) {
      const again = await send(rawBody);
      expect(again.status, rawBody).toBe(200);
      expect(again.headers['idempotent-replay']).toBe('true');
      expect(again.text).toBe(first.text);
    }
    const other = await send('{"external_user_id":"c","amount":1001,"auto_cashout":2.5}');
    expect(other.status).toBe(409);
    expect(other.body).toEqual({ error: 'idempotency key reused with different body', code: 'IDEMPOTENCY_KEY_REUSED' });
    // A string is not a number: refused by validation, not taken as the same request.
    const text = await send('{"external_user_id":"c","amount":"1000","auto_cashout":2.5}');
    expect(text.status).toBe(400);
    expect(await betsOf(t, op.id)).toBe(1);
  });

  it('scopes keys per operator, and the same key on another route or surface is a conflict', async () => {
    const op = await t.createOperator();
    const other = await t.createOperator({ name: 'other' });
    const a = client(t.baseUrl, op);
    const b = client(t.baseUrl, op, 'B');
    await bettingOpen(a);
    const placed = await a(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 's', amount: 100 },
      {
        idempotencyKey: 'shared',
      },
    );
    expect(placed.status).toBe(200);
    const cashout = await a(
      'POST',
      '/api/public/v1/cashout',
      { bet_id: placed.body.bet_id },
      {
        idempotencyKey: 'shared',
      },
    );
    expect(cashout.status).toBe(409);
    expect(cashout.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const launch = await b(
      'POST',
      '/v1/sessions/launch',
      { player_ref: 'p', currency: 'EUR', return_url: 'https://op.example/' },
      {
        idempotencyKey: 'shared',
      },
    );
    expect(launch.status).toBe(409);
    expect(launch.body.error).toBe('IDEMPOTENCY_KEY_REUSED');
    const reserve = await b('POST', '/v1/bets/reserve', {
      session_id: 'ses_x',
      round_id: 'rnd_x',
      selected_stocks: ['NVDA'],
      stake: 10,
      idempotency_key: 'shared',
    });
    expect(reserve.status).toBe(409);
    expect(reserve.body.error).toBe('IDEMPOTENCY_KEY_REUSED');
    // Another operator's key of the same name is its own.
    const theirs = await client(t.baseUrl, other)(
      'POST',
      '/api/public/v1/place-bet',
      {
        external_user_id: 's',
        amount: 100,
      },
      { idempotencyKey: 'shared' },
    );
    expect(theirs.status).toBe(200);
    expect(theirs.headers['idempotent-replay']).toBeUndefined();
    expect(theirs.body.bet_id).not.toBe(placed.body.bet_id);
  });

  it('a key whose request failed validation is free; a domain refusal is stored and replayed', async () => {
    const op = await t.createOperator({ settings: { crash: { max_payout_per_bet: 5_000 } } as never });
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const bet = (body: unknown, key: string) => call('POST', '/api/public/v1/place-bet', body, { idempotencyKey: key });
    const invalid = await bet({ external_user_id: 'v', amount: 100, auto_cashout: 1.234 }, 'after-400');
    expect(invalid.status).toBe(400);
    const unknown = await bet({ external_user_id: 'v', amount: 100, extra: 1 }, 'after-400');
    expect(unknown.body.code).toBe('UNKNOWN_FIELD');
    const fixed = await bet({ external_user_id: 'v', amount: 100 }, 'after-400');
    expect(fixed.status).toBe(200);
    expect(fixed.headers['idempotent-replay']).toBeUndefined();

    const refused = await bet({ external_user_id: 'v', amount: 9_000 }, 'refused');
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('STAKE_OUT_OF_RANGE');
    const again = await bet({ external_user_id: 'v', amount: 9_000 }, 'refused');
    expect(again.status).toBe(400);
    expect(again.headers['idempotent-replay']).toBe('true');
    expect(again.text).toBe(refused.text);
    const changed = await bet({ external_user_id: 'v', amount: 100 }, 'refused');
    expect(changed.status).toBe(409);
    expect(changed.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await betsOf(t, op.id)).toBe(1);
  });

  it('takes keys of 1 to 255 characters; empty, longer or given twice is a 400 and places nothing', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const bet = (key: string, headers: Record<string, string> = {}) =>
      call(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: 'k', amount: 100 },
        {
          headers: { 'idempotency-key': key, ...headers },
        },
      );
    const longest = await bet('k'.repeat(255));
    expect(longest.status).toBe(200);
    expect((await bet('k'.repeat(255))).headers['idempotent-replay']).toBe('true');
    const tooLong = await bet('k'.repeat(256));
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.code).toBe('VALIDATION_FAILED');
    const empty = await bet('');
    expect(empty.status).toBe(400);
    expect(empty.body.code).toBe('IDEMPOTENCY_KEY_MISSING');
    const spaces = await bet('a, b');
    expect(spaces.status).toBe(200);
    expect(await betsOf(t, op.id)).toBe(2);
  });

  it('keys with bytes beyond ASCII are their own keys, never a 5xx', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    // Header values travel as bytes; Node reads them as latin1. "ключ" in UTF-8 is 8 such characters.
    const utf8 = Buffer.from('ключ-é', 'utf8').toString('latin1');
    const first = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'u8', amount: 100 },
      {
        headers: { 'idempotency-key': utf8 },
      },
    );
    expect(first.status).toBe(200);
    const again = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'u8', amount: 100 },
      {
        headers: { 'idempotency-key': utf8 },
      },
    );
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replay']).toBe('true');
    expect(await betsOf(t, op.id)).toBe(1);
  });

  it('a captured place-bet with its signature upper-cased, under a new key, is a replay', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const path = '/api/public/v1/place-bet';
    const raw = JSON.stringify({ external_user_id: 'up', amount: 100 });
    const headers = signedA(op, path, Date.now(), raw, 'up-1');
    expect((await resend(t.baseUrl, path, headers, raw)).status).toBe(200);
    const upper = { ...headers, 'x-signature': headers['x-signature']!.toUpperCase(), 'idempotency-key': 'up-2' };
    const forged = await resend(t.baseUrl, path, upper, raw);
    expect(forged.status).toBe(409);
    expect(forged.body.code).toBe('REQUEST_REPLAYED');
    // The same bytes with the key they were sent with are the idempotent retry, whatever the hex case.
    const retry = await resend(t.baseUrl, path, { ...upper, 'idempotency-key': 'up-1' }, raw);
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replay']).toBe('true');
    expect(await betsOf(t, op.id)).toBe(1);
  });

  it('a query string is refused, a trailing slash is the same route; a moved captured path fails', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const body = { external_user_id: 'q', amount: 100 };
    const first = await call('POST', '/api/public/v1/place-bet', body, { idempotencyKey: 'q' });
    expect(first.status).toBe(200);
    // Unknown query fields are refused like unknown body fields.
    const query = await call('POST', '/api/public/v1/place-bet?retry=1', body, { idempotencyKey: 'q' });
    expect(query.status).toBe(400);
    expect(query.body.code).toBe('UNKNOWN_FIELD');
    const slash = await call('POST', '/api/public/v1/place-bet/', body, { idempotencyKey: 'q' });
    expect(slash.status).toBe(200);
    expect(slash.headers['idempotent-replay']).toBe('true');
    expect(slash.text).toBe(first.text);
    // A signed path is the path as sent: the captured bytes sent to another spelling fail the HMAC.
    const path = '/api/public/v1/place-bet';
    const raw = JSON.stringify(body);
    const headers = signedA(op, path, Date.now(), raw, 'q-2');
    for (const other of ['/api/public/v1/place-bet?x=1', '/api/public/v1/place%2Dbet', '/api/public/v1//place-bet']) {
      const moved = await resend(t.baseUrl, other, { ...headers, 'idempotency-key': 'q-3' }, raw);
      expect(moved.status, other).not.toBe(200);
      expect(moved.status, other).toBeLessThan(500);
    }
    expect(await betsOf(t, op.id)).toBe(1);
  });

  it('reserve: 20 at once with the same body, and number spellings of the stake, are one bet', async () => {
    const op = await t.createOperator();
    const b = client(t.baseUrl, op, 'B');
    const launched = await b('POST', '/v1/sessions/launch', {
      player_ref: 'r1',
      currency: 'EUR',
      return_url: 'https://op.example/',
    });
    expect(launched.status).toBe(200);
    const round = await eventually(async () => {
      const r = await b('GET', '/v1/rounds/current');
      return r.body?.status === 'open' ? r.body : undefined;
    }, 15_000);
    const body = {
      session_id: launched.body.session_id,
      round_id: round.round_id,
      selected_stocks: ['NVDA', 'TSLA'],
      stake: 10.5,
      idempotency_key: 'reserve-burst',
    };
    let stamp = Date.now() - 100;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => b('POST', '/v1/bets/reserve', body, { timestamp: ++stamp })),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers.filter((a) => a.headers['idempotent-replay'] === 'true')).toHaveLength(19);
    const rawBody = JSON.stringify(body).replace('10.5', '1.050e1');
    const spelled = await b('POST', '/v1/bets/reserve', undefined, { rawBody, timestamp: ++stamp });
    expect(spelled.status).toBe(200);
    expect(spelled.headers['idempotent-replay']).toBe('true');
    expect(spelled.text).toBe(answers[0]!.text);
    const other = await b('POST', '/v1/bets/reserve', { ...body, stake: 10.51 }, { timestamp: ++stamp });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ error: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await betsOf(t, op.id)).toBe(1);
  });

  it('a keyed session launch sent 20 times at once opens one session', async () => {
    const op = await t.createOperator();
    const b = client(t.baseUrl, op, 'B');
    const body = { player_ref: 'launch-burst', currency: 'EUR', return_url: 'https://op.example/' };
    let stamp = Date.now() - 100;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        b('POST', '/v1/sessions/launch', body, { timestamp: ++stamp, idempotencyKey: 'launch-burst' }),
      ),
    );
    const ok = answers.filter((a) => a.status === 200);
    // Waiting or 409 IDEMPOTENCY_KEY_IN_FLIGHT are both allowed; never a second session.
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect(a.status).toBe(409);
      expect(a.body.error).toBe('IDEMPOTENCY_KEY_IN_FLIGHT');
    }
    expect(new Set(ok.map((a) => a.text)).size).toBe(1);
    const row = await t.app.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM sessions WHERE operator_id = ?', [
      op.id,
    ]);
    expect(Number(row!.n)).toBe(1);
  });

  it('a signed GET may be sent again as it is (reads are not recorded, docs/security.md)', async () => {
    const op = await t.createOperator();
    const call = client(t.baseUrl, op);
    const ts = Date.now();
    const first = await call('GET', '/api/public/v1/rounds/current', undefined, { timestamp: ts });
    const again = await call('GET', '/api/public/v1/rounds/current', undefined, { timestamp: ts });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
  });
});

describe('the timestamp window, at its edges', () => {
  const clock = new FakeClock(Date.now());
  let t: TestApp;
  let call: Call;
  beforeAll(async () => {
    t = await startTestApp({ clock, engines: false });
    call = client(t.baseUrl, await t.createOperator());
  });
  afterAll(async () => t?.close());

  it('accepts exactly 5 minutes either way and refuses 1 ms more (docs: "more than 5 minutes")', async () => {
    const at = (offset: number) =>
      call('GET', '/api/public/v1/rounds/current', undefined, { timestamp: clock.now() + offset });
    // No round yet (engines off): an accepted request gets as far as the 404.
    expect((await at(-300_000)).status).toBe(404);
    expect((await at(300_000)).status).toBe(404);
    const old = await at(-300_001);
    expect(old.status).toBe(401);
    expect(old.body.code).toBe('STALE_TIMESTAMP');
    const ahead = await at(300_001);
    expect(ahead.status).toBe(401);
    expect(ahead.body.code).toBe('STALE_TIMESTAMP');
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A request refused before it reached the idempotency layer (429 here; 503, 500 or a disabled operator
 * alike) never has its signature recorded. The operator's client retries under the same key, signed
 * afresh; the bytes of the refused attempt stay replayable for the rest of the 5-minute window.
 */
describe('captured requests that were first refused by the rate limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { CRASH_BETTING_WINDOW_MS: '60000' } });
  });
  afterAll(async () => t?.close());

  const slow = { rate_limit: { refill_per_second: 1, burst: 1 } } as never;

  // A 429'd place-bet's signature used to be recorded nowhere, so once the operator's retry placed the
  // bet under its key, the captured first attempt sent under a new key placed a second bet.
  // docs/decisions.md, "Replayed signed requests": the same bytes again are 409 REQUEST_REPLAYED except
  // with the same key.
  it('a rate-limited place-bet replayed under a new key after the retry succeeded is refused', async () => {
    const op = await t.createOperator({ settings: slow });
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const path = '/api/public/v1/place-bet';
    const raw = JSON.stringify({ external_user_id: 'limited', amount: 100 });
    const captured = signedA(op, path, Date.now(), raw, 'limited-1');
    const refused = await resend(t.baseUrl, path, captured, raw);
    expect(refused.status).toBe(429);
    await sleep(1_100);
    const retry = await resend(t.baseUrl, path, signedA(op, path, Date.now(), raw, 'limited-1'), raw);
    expect(retry.status).toBe(200);
    await sleep(1_100);
    const forged = await resend(t.baseUrl, path, { ...captured, 'idempotency-key': 'limited-2' }, raw);
    expect(await betsOf(t, op.id)).toBe(1);
    expect(forged.body.code).toBe('REQUEST_REPLAYED');
  });

  it('a rate-limited place-bet resent as is under its own key is placed once; under another, refused', async () => {
    const op = await t.createOperator({ settings: slow });
    const call = client(t.baseUrl, op);
    await bettingOpen(call);
    const path = '/api/public/v1/place-bet';
    const raw = JSON.stringify({ external_user_id: 'resent', amount: 100 });
    const captured = signedA(op, path, Date.now(), raw, 'resent-1');
    expect((await resend(t.baseUrl, path, captured, raw)).status).toBe(429);
    await sleep(1_100);
    // A client that resends the very bytes after Retry-After: the request again, not a replay.
    const again = await resend(t.baseUrl, path, captured, raw);
    expect(again.status).toBe(200);
    await sleep(1_100);
    const forged = await resend(t.baseUrl, path, { ...captured, 'idempotency-key': 'resent-2' }, raw);
    expect(forged.body.code).toBe('REQUEST_REPLAYED');
    expect(await betsOf(t, op.id)).toBe(1);
  });

  // The same cause: docs/decisions.md, "The other POSTs": "captured bytes sent again never fetch a
  // stored secret". The 429'd launch sent again with its key used to fetch the stored launch URL.
  it('a rate-limited session launch sent again fetches no stored launch URL', async () => {
    const op = await t.createOperator({ settings: slow });
    const b = client(t.baseUrl, op, 'B');
    await b('GET', '/v1/rounds/current');
    const raw = JSON.stringify({ player_ref: 'limited', currency: 'EUR', return_url: 'https://op.example/' });
    const ts = String(Date.now());
    const captured = {
      'content-type': 'application/json',
      'X-Operator-Key': op.apiKey,
      'X-Timestamp': ts,
      'X-Signature': signRequest(op.apiSecret, 'POST', '/v1/sessions/launch', ts, raw),
      'idempotency-key': 'launch-limited',
    };
    const refused = await resend(t.baseUrl, '/v1/sessions/launch', captured, raw);
    expect(refused.status).toBe(429);
    await sleep(1_100);
    const retry = await b('POST', '/v1/sessions/launch', undefined, { rawBody: raw, idempotencyKey: 'launch-limited' });
    expect(retry.status).toBe(200);
    await sleep(1_100);
    const again = await resend(t.baseUrl, '/v1/sessions/launch', captured, raw);
    expect(again.body?.launch_url).toBeUndefined();
    expect(again.status).toBe(409);
  });
});

describe('two instances on one PostgreSQL schema', () => {
  const env = { CRASH_BETTING_WINDOW_MS: '60000', STOCK_RACE_BETTING_WINDOW_MS: '60000' };
  let first: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    first = await startTestApp({ store: 'postgres', env });
    second = await startTestApp({ replicaOf: first, engines: false, env });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('20 place-bets under one key spread over both: one bet, one answer; no retry replays as a new bet', async () => {
    const op = await first.createOperator();
    await bettingOpen(client(first.baseUrl, op));
    const path = '/api/public/v1/place-bet';
    const raw = JSON.stringify({ external_user_id: 'two', amount: 150 });
    const ts = Date.now();
    const sent = Array.from({ length: 20 }, (_, i) => signedA(op, path, ts - i, raw, 'two-key'));
    const answers = await Promise.all(
      sent.map((headers, i) => resend((i % 2 ? second : first).baseUrl, path, headers, raw)),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers.filter((a) => a.headers['idempotent-replay'] === 'true')).toHaveLength(19);
    expect(await betsOf(first, op.id)).toBe(1);
    for (const i of [0, 1, 18, 19]) {
      const to = (i % 2 ? first : second).baseUrl;
      const forged = await resend(to, path, { ...sent[i]!, 'idempotency-key': `two-forged-${i}` }, raw);
      expect(forged.body.code).toBe('REQUEST_REPLAYED');
    }
    expect(await betsOf(first, op.id)).toBe(1);
  });

  it('20 reserves and 20 keyed launches spread over both: one bet, one session', async () => {
    const op = await first.createOperator();
    const on = (i: number) => client((i % 2 ? second : first).baseUrl, op, 'B');
    const launch = { player_ref: 'two', currency: 'EUR', return_url: 'https://op.example/' };
    let stamp = Date.now() - 200;
    const launches = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        on(i)('POST', '/v1/sessions/launch', launch, { timestamp: ++stamp, idempotencyKey: 'two-launch' }),
      ),
    );
    for (const a of launches.filter((x) => x.status !== 200)) {
      expect(a.status).toBe(409);
      expect(a.body.error).toBe('IDEMPOTENCY_KEY_IN_FLIGHT');
    }
    const ok = launches.filter((a) => a.status === 200);
    expect(ok.length).toBeGreaterThan(0);
    expect(new Set(ok.map((a) => a.body.session_id)).size).toBe(1);
    const sessions = await first.app.db.get<{ n: number | string }>(
      'SELECT COUNT(*) AS n FROM sessions WHERE operator_id = ?',
      [op.id],
    );
    expect(Number(sessions!.n)).toBe(1);

    const round = await eventually(async () => {
      const r = await on(0)('GET', '/v1/rounds/current');
      return r.body?.status === 'open' ? r.body : undefined;
    }, 15_000);
    const body = {
      session_id: ok[0]!.body.session_id,
      round_id: round.round_id,
      selected_stocks: ['AAPL'],
      stake: 5,
      idempotency_key: 'two-reserve',
    };
    const reserves = await Promise.all(
      Array.from({ length: 20 }, (_, i) => on(i)('POST', '/v1/bets/reserve', body, { timestamp: ++stamp })),
    );
    expect(reserves.map((a) => a.status)).toEqual(reserves.map(() => 200));
    expect(new Set(reserves.map((a) => a.text)).size).toBe(1);
    expect(reserves.filter((a) => a.headers['idempotent-replay'] === 'true')).toHaveLength(19);
    expect(await betsOf(first, op.id)).toBe(1);
  });
});
