import { createHash } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/signing/request-signature';
import {
  client,
  eventually,
  KNOWN_CRASH_SEEDS,
  startTestApp,
  STORES,
  withSeeds,
  type TestApp,
  type TestOperator,
} from '../support/harness';

/**
 * A whole Crash round over real HTTP, on a seed whose result is published (1.26x), so every payout
 * is asserted to the unit.
 */
describe.each(STORES)('Crash round over Surface A on %s', (store) => {
  let t: TestApp;
  let op: TestOperator;
  let call: ReturnType<typeof client>;

  beforeAll(async () => {
    t = await startTestApp({
      store,
      env: { CRASH_BETTING_WINDOW_MS: '1500', CRASH_PAUSE_MS: '60000', CRASH_TICK_MS: '50' },
      beforeStart: withSeeds('crash', [KNOWN_CRASH_SEEDS.x126]),
    });
    op = await t.createOperator();
    call = client(t.baseUrl, op);
  });
  afterAll(async () => t?.close());

  it('plays a round: bets, replays, a manual and an auto cash-out, a loss, the reveal', async () => {
    const open = await eventually(async () => {
      const r = await call('GET', '/api/public/v1/rounds/current');
      return r.body?.status === 'open' ? r.body : undefined;
    });
    expect(open.seed).toBeNull();
    expect(open.seed_hash).toBe(createHash('sha256').update(KNOWN_CRASH_SEEDS.x126).digest('hex'));

    const body = { external_user_id: 'alice', amount: 1_000, auto_cashout: 1.1 };
    const first = await call('POST', '/api/public/v1/place-bet', body, { idempotencyKey: 'bet-1' });
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replay']).toBeUndefined();
    expect(first.body).toEqual({
      bet_id: first.body.bet_id,
      external_user_id: 'alice',
      round_number: 1,
      amount: 1_000,
      auto_cashout: 1.1,
    });

    // Same key, same content in another key order and spacing: the stored response, no new bet.
    const replay = await call('POST', '/api/public/v1/place-bet', undefined, {
      idempotencyKey: 'bet-1',
      rawBody: '{ "auto_cashout": 1.1, "amount": 1000, "external_user_id": "alice" }',
    });
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replay']).toBe('true');
    expect(replay.body).toEqual(first.body);

    const conflict = await call(
      'POST',
      '/api/public/v1/place-bet',
      { ...body, amount: 1_001 },
      { idempotencyKey: 'bet-1' },
    );
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ error: 'idempotency key reused with different body' });

    // Concurrent duplicates: one bet.
    const dupes = await Promise.all(
      Array.from({ length: 8 }, () =>
        call('POST', '/api/public/v1/place-bet', { external_user_id: 'bob', amount: 700 }, { idempotencyKey: 'bet-2' }),
      ),
    );
    expect(new Set(dupes.map((d) => d.body.bet_id)).size).toBe(1);
    expect(dupes.filter((d) => d.headers['idempotent-replay'] === 'true')).toHaveLength(7);
    const manual = dupes[0]!.body;

    const loser = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'carol', amount: 500, auto_cashout: 1.3 },
      { idempotencyKey: 'bet-3' },
    );
    const atCrash = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'dave', amount: 333, auto_cashout: 1.26 },
      { idempotencyKey: 'bet-4' },
    );

    // Cash-out before the round runs is refused, and the refusal is remembered under its key.
    const early = await call('POST', '/api/public/v1/cashout', { bet_id: manual.bet_id }, { idempotencyKey: 'early' });
    expect(early.status).toBe(409);
    expect(early.body.code).toBe('ROUND_NOT_RUNNING');

    await eventually(async () => (await call('GET', '/api/public/v1/rounds/1')).body?.status === 'running');
    const late = await call(
      'POST',
      '/api/public/v1/place-bet',
      { external_user_id: 'eve', amount: 1 },
      { idempotencyKey: 'bet-5' },
    );
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('BETTING_CLOSED');

    // Wait until the curve is past 1.05x so the cash-out is worth something.
    await eventually(
      async () => (await call('GET', '/api/public/v1/rounds/current')).body?.multiplier >= 1.05,
      5_000,
      20,
    );
    const cashed = await call(
      'POST',
      '/api/public/v1/cashout',
      { bet_id: manual.bet_id },
      { idempotencyKey: 'cash-1' },
    );
    expect(cashed.status).toBe(200);
    expect(cashed.body.multiplier).toBeGreaterThanOrEqual(1.05);
    expect(cashed.body.payout).toBe(Math.floor((700 * Math.round(cashed.body.multiplier * 100)) / 100));
    expect(cashed.body.multiplier).toBeLessThan(1.26);

    const again = await call(
      'POST',
      '/api/public/v1/cashout',
      { bet_id: manual.bet_id },
      { idempotencyKey: 'cash-again' },
    );
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('BET_NOT_ACTIVE');

    const closed = await eventually(async () => {
      const r = await call('GET', '/api/public/v1/rounds/1');
      return r.body?.status === 'closed' ? r.body : undefined;
    }, 10_000);
    expect(closed.seed).toBe(KNOWN_CRASH_SEEDS.x126);
    expect(closed.outcome).toEqual({ crash_point: 1.26 });

    const bet = async (id: string) => (await call('GET', `/api/public/v1/bets/${id}`)).body;
    expect(await bet(first.body.bet_id)).toMatchObject({
      status: 'cashed_out',
      multiplier: 1.1,
      payout: 1_100,
      cashout_kind: 'auto',
    });
    expect(await bet(atCrash.body.bet_id)).toMatchObject({
      status: 'cashed_out',
      multiplier: 1.26,
      payout: 419,
      cashout_kind: 'auto',
    });
    expect(await bet(loser.body.bet_id)).toMatchObject({ status: 'lost', payout: 0 });
    expect(await bet(manual.bet_id)).toMatchObject({
      status: 'cashed_out',
      payout: cashed.body.payout,
      cashout_kind: 'manual',
    });

    const count = await t.app.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM bets');
    expect(Number(count!.n)).toBe(4);

    // Anyone can recompute the round from the revealed seed.
    const verify = await request(`${t.baseUrl}/fairness/rounds/${closed.round_id}`);
    expect(await verify.body.json()).toMatchObject({ commitment_holds: true, recomputed: { crash_point: 1.26 } });
  }, 30_000);

  it('shows operators only their own bets', async () => {
    const other = client(t.baseUrl, await t.createOperator({ name: 'other' }));
    const mine = (await t.app.db.get<{ id: string }>('SELECT id FROM bets LIMIT 1'))!;
    const r = await other('GET', `/api/public/v1/bets/${mine.id}`);
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('BET_NOT_FOUND');
    const c = await other('POST', '/api/public/v1/cashout', { bet_id: mine.id }, { idempotencyKey: 'steal' });
    expect(c.status).toBe(404);
  });

  it('streams round state as Server-Sent Events', async () => {
    const ts = String(Date.now());
    const path = '/api/public/v1/rounds/stream';
    const res = await request(`${t.baseUrl}${path}`, {
      headers: {
        'x-api-key': op.apiKey,
        'x-timestamp': ts,
        'x-signature': signRequest(op.apiSecret, 'GET', path, ts, ''),
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    let text = '';
    for await (const chunk of res.body) {
      text += chunk.toString();
      if (text.includes('event: round')) break;
    }
    res.body.destroy();
    const data = JSON.parse(text.split('event: round\ndata: ')[1]!.split('\n')[0]!);
    expect(data).toMatchObject({ game: 'crash', round_number: 1 });
  });
});
