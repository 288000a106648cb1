import { BettingApiError, BettingNetworkError, CrashClient, StockRaceClient } from '@round-betting/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestApp, type TestApp, type TestOperator } from '../support/harness';

/**
 * What an integrator sees from @round-betting/client at the edges: lost answers, a duplicate still
 * in flight on another instance, the caller's own deadline, odd clocks. Every call goes to a real
 * service over HTTP; a fetch wrapper (the client's `fetch` option) plays the network in between.
 */

/** What the wrapper does with one attempt. */
type Fault =
  | 'pass'
  /** Forward it (the service applies it), then fail as a connection cut after the write would. */
  | 'lose-answer'
  /** Forward it, then fire `abort` before the answer reaches the caller (the caller's deadline). */
  | { abortAfterSend: AbortController }
  /** Answer without forwarding (what another instance or a load balancer would say). */
  | { status: number; body: unknown };

interface Sent {
  method: string;
  path: string;
  headers: Headers;
  body: string;
}

function network(faults: Fault[], sent: Sent[]): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = new Headers(init?.headers);
    const body = typeof init?.body === 'string' ? init.body : '';
    sent.push({ method: init?.method ?? 'GET', path: url.pathname + url.search, headers, body });
    const fault = faults.shift() ?? 'pass';
    if (typeof fault === 'object' && 'status' in fault) {
      return new Response(JSON.stringify(fault.body), {
        status: fault.status,
        headers: { 'content-type': 'application/json' },
      });
    }
    if (fault === 'pass') return fetch(url, init);
    // The service answers (and commits) regardless of the caller's signal: send without it.
    const answer = await fetch(url, { ...init, signal: undefined });
    await answer.text();
    if (fault === 'lose-answer') throw new TypeError('fetch failed', { cause: new Error('other side closed') });
    fault.abortAfterSend.abort();
    throw fault.abortAfterSend.signal.reason;
  };
}

const count = async (t: TestApp, sql: string, params: string[]) =>
  Number((await t.app.db.get<{ n: number }>(sql, params))!.n);
const betsOf = (t: TestApp, player: string) => count(t, 'SELECT COUNT(*) AS n FROM bets WHERE player = ?', [player]);

describe('@round-betting/client edges against a running service', () => {
  let t: TestApp;
  let op: TestOperator;
  let roundId: string;
  let sessionId: string;
  const options = () => ({ baseUrl: t.baseUrl, apiKey: op.apiKey, apiSecret: op.apiSecret });
  const through = (faults: Fault[], sent: Sent[]) => ({
    ...options(),
    fetch: network(faults, sent),
    retry: { baseDelayMs: 20 },
  });

  beforeAll(async () => {
    // Long windows: every bet in this file lands in the one open round of each game.
    t = await startTestApp({ env: { CRASH_BETTING_WINDOW_MS: '600000', STOCK_RACE_BETTING_WINDOW_MS: '600000' } });
    op = await t.createOperator();
    const crash = new CrashClient(options());
    const race = new StockRaceClient(options());
    await eventually(async () => (await crash.currentRound().catch(() => null))?.status === 'open');
    const round = await eventually(async () => {
      const r = await race.currentRound().catch(() => null);
      return r?.status === 'open' ? r : undefined;
    });
    roundId = round.round_id;
    const session = await race.launchSession({
      player_ref: 'edges',
      currency: 'EUR',
      return_url: 'https://operator.example/lobby',
    });
    sessionId = session.session_id;
  });
  afterAll(async () => t?.close());

  it('signs non-ASCII bodies and query strings over the bytes it sends', async () => {
    const sent: Sent[] = [];
    const crash = new CrashClient(through([], sent));
    const placed = await crash.placeBet({ external_user_id: 'joão 🎲 "q" \u2028', amount: 7 });
    expect(placed.external_user_id).toBe('joão 🎲 "q" \u2028');
    const race = new StockRaceClient(through([], sent));
    expect(await race.webhooks.deliveries({ status: 'dead', limit: '5', before: String(Date.now()) })).toEqual([]);
    expect(sent.at(-1)!.path).toMatch(/^\/v1\/webhook-deliveries\?status=dead&limit=5&before=\d+$/);
  });

  it('Surface A: a retry told IDEMPOTENCY_KEY_IN_FLIGHT asks again under the same key; one bet', async () => {
    // Another instance still holds the first attempt's key: the service says "retry shortly".
    const inFlight = {
      status: 409,
      body: {
        error: 'a request with this idempotency key is still being processed; retry shortly',
        code: 'IDEMPOTENCY_KEY_IN_FLIGHT',
      },
    };
    const sent: Sent[] = [];
    const crash = new CrashClient(through(['lose-answer', inFlight], sent));
    const res = await crash.placeBetWithResponse({ external_user_id: 'in-flight-a', amount: 100 });
    expect(res).toMatchObject({ status: 200, replayed: true });
    expect(sent).toHaveLength(3);
    expect(new Set(sent.map((s) => s.headers.get('idempotency-key'))).size).toBe(1);
    expect(await betsOf(t, 'in-flight-a')).toBe(1);
  });

  it('Surface B: a reserve told IDEMPOTENCY_KEY_IN_FLIGHT asks again with the same body; one bet', async () => {
    const inFlight = {
      status: 409,
      body: {
        error: 'IDEMPOTENCY_KEY_IN_FLIGHT',
        message: 'a request with this idempotency key is still being processed',
      },
    };
    const sent: Sent[] = [];
    const race = new StockRaceClient(through(['lose-answer', inFlight], sent));
    const res = await race.reserveWithResponse({
      session_id: sessionId,
      round_id: roundId,
      selected_stocks: ['AAPL'],
      stake: 2.5,
    });
    expect(res).toMatchObject({ status: 200, replayed: true });
    expect(new Set(sent.map((s) => s.body)).size).toBe(1);
    expect(await count(t, 'SELECT COUNT(*) AS n FROM bets WHERE id = ?', [res.data.bet_id])).toBe(1);
  });

  it("the caller's deadline leaves the outcome unknown: the error carries the key, which places it once", async () => {
    const deadline = new AbortController();
    const sent: Sent[] = [];
    const crash = new CrashClient(through([{ abortAfterSend: deadline }], sent));
    const error = await crash
      .placeBet({ external_user_id: 'caller-deadline', amount: 100 }, { signal: deadline.signal })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BettingNetworkError);
    const key = (error as BettingNetworkError).idempotencyKey;
    expect(key).toBe(sent[0]!.headers.get('idempotency-key'));
    // The service did place it: asking again under that key answers it, and nothing new is placed.
    const again = await new CrashClient(options()).placeBetWithResponse(
      { external_user_id: 'caller-deadline', amount: 100 },
      { idempotencyKey: key },
    );
    expect(again.replayed).toBe(true);
    expect(await betsOf(t, 'caller-deadline')).toBe(1);
  });

  it('a DELETE whose answer was lost and whose retry finds the endpoint gone has succeeded', async () => {
    const sent: Sent[] = [];
    const crash = new CrashClient(through(['pass', 'lose-answer'], sent));
    const endpoint = await crash.webhooks.create({ url: 'https://receiver.example/hooks' });
    await expect(crash.webhooks.delete(endpoint.endpoint_id)).resolves.toBeUndefined();
    expect(sent.filter((s) => s.method === 'DELETE')).toHaveLength(2);
    expect((await crash.webhooks.list()).map((e) => e.endpoint_id)).not.toContain(endpoint.endpoint_id);
    // A first attempt's 404 still means "no such endpoint".
    await expect(crash.webhooks.delete(endpoint.endpoint_id)).rejects.toMatchObject({
      status: 404,
      code: 'WEBHOOK_ENDPOINT_NOT_FOUND',
    });
  });

  it('a retry in the same millisecond is signed with a new timestamp, not refused as a replay', async () => {
    const sent: Sent[] = [];
    const frozen = Date.now();
    const race = new StockRaceClient({ ...through(['pass', 'lose-answer'], sent), now: () => frozen });
    const endpoint = await race.webhooks.create({ url: 'https://receiver.example/b' });
    const updated = await race.webhooks.update(endpoint.endpoint_id, { enabled: false });
    expect(updated.enabled).toBe(false);
    const patches = sent.filter((s) => s.method === 'PATCH');
    expect(patches).toHaveLength(2);
    expect(patches[1]!.headers.get('x-timestamp')).not.toBe(patches[0]!.headers.get('x-timestamp'));
  });

  it('a clock with sub-millisecond precision still yields an integer X-Timestamp the service accepts', async () => {
    const sent: Sent[] = [];
    const crash = new CrashClient({ ...through([], sent), now: () => performance.timeOrigin + performance.now() });
    await expect(crash.currentRound()).resolves.toMatchObject({ game: 'crash' });
    expect(sent[0]!.headers.get('x-timestamp')).toMatch(/^\d+$/);
  });

  it('takes numbers for the integer query parameters the docs describe (limit, before)', async () => {
    const sent: Sent[] = [];
    const race = new StockRaceClient(through([], sent));
    // Typed as strings (the query schema's type) until the client widened them: this did not compile.
    expect(await race.settlements({ status: 'pending', limit: 2 })).toEqual([]);
    expect(await race.webhooks.deliveries({ limit: 3, before: Date.now() })).toEqual([]);
    expect(sent.map((s) => s.path.split('?')[1])).toEqual([
      'status=pending&limit=2',
      expect.stringMatching(/^limit=3&before=\d+$/),
    ]);
  });

  it('a 4xx keeps the code, status and request id the service answered with', async () => {
    const sent: Sent[] = [];
    const race = new StockRaceClient(through([], sent));
    const error = (await race
      .reserve({ session_id: sessionId, round_id: roundId, selected_stocks: ['AAPL'], stake: 1.001 })
      .catch((e: unknown) => e)) as BettingApiError;
    expect(error).toBeInstanceOf(BettingApiError);
    expect(error).toMatchObject({ surface: 'B', status: 400 });
    expect(error.code).not.toMatch(/^HTTP_/);
    expect(error.traceId).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent).toHaveLength(1);
  });
});
