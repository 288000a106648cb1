import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  eventually,
  KNOWN_CRASH_SEEDS,
  startTestApp,
  withSeeds,
  type TestApp,
  type TestOperator,
} from '../support/harness';
import { TestReceiver } from '../support/webhook-receiver';

interface Envelope {
  type: string;
  data: Record<string, any>;
}

/**
 * docs/webhooks.md promises that a round event's `data` is the round's read endpoint object at that
 * moment. Both games, both events, compared whole: a field on one side only fails the test.
 */
describe('round.opened and round.closed carry the read endpoint object', () => {
  const receiver = new TestReceiver();
  let t: TestApp;
  let op: TestOperator;

  beforeAll(async () => {
    const base = await receiver.start();
    t = await startTestApp({
      env: {
        CRASH_BETTING_WINDOW_MS: '4000',
        CRASH_PAUSE_MS: '300',
        CRASH_TICK_MS: '50',
        STOCK_RACE_BETTING_WINDOW_MS: '4000',
        STOCK_RACE_DURATION_MS: '300',
        STOCK_RACE_PAUSE_MS: '300',
        STOCK_RACE_TICK_MS: '100',
        OUTBOX_POLL_MS: '50',
      },
      // 1.18x: each Crash round ends a second after betting closes.
      beforeStart: withSeeds('crash', [KNOWN_CRASH_SEEDS.x118, KNOWN_CRASH_SEEDS.x118, KNOWN_CRASH_SEEDS.x118]),
    });
    op = await t.createOperator();
    const r = await client(t.baseUrl, op)('POST', '/api/public/v1/webhook-endpoints', {
      url: `${base}/rounds`,
      events: ['round.opened', 'round.closed'],
    });
    expect(r.status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  const events = (): Envelope[] =>
    receiver.received.filter((r) => r.path === '/rounds').map((r) => JSON.parse(r.body) as Envelope);
  const event = (game: string, type: string): Promise<Envelope> =>
    eventually(
      async () => events().find((e) => e.data.game === game && e.type === type),
      20_000,
      50,
      `${game} ${type}`,
    );

  it('Crash: equal to GET /api/public/v1/rounds/{round_number}, open then closed', async () => {
    const call = client(t.baseUrl, op);
    const opened = await event('crash', 'round.opened');
    const whileOpen = await call('GET', `/api/public/v1/rounds/${opened.data.round_number}`);
    // The betting window is 4 s: the round is still open when its event arrives.
    expect(opened.data).toEqual(whileOpen.body);
    const closed = await event('crash', 'round.closed');
    expect(closed.data.status).toBe('closed');
    expect(closed.data).toEqual((await call('GET', `/api/public/v1/rounds/${closed.data.round_number}`)).body);
    // What recomputing it takes travels with the round: the salt and the house edge it was played with.
    expect(closed.data).toMatchObject({
      outcome: { crash_point: 1.18 },
      salt: t.config.crash.salt,
      house_edge_bp: 100,
    });
  });

  it('Stock Race: equal to GET /v1/rounds/{round_id}, with the symbols and the race length', async () => {
    const call = client(t.baseUrl, op, 'B');
    const opened = await event('stock_race', 'round.opened');
    expect(opened.data).toMatchObject({
      status: 'open',
      symbols: expect.arrayContaining(['AAPL', 'TSLA']),
      race_ms: 300,
    });
    const whileOpen = await call('GET', `/v1/rounds/${opened.data.round_id}`);
    expect(opened.data).toEqual(whileOpen.body);
    const closed = await event('stock_race', 'round.closed');
    expect(closed.data).toMatchObject({ status: 'closed', symbols: opened.data.symbols, race_ms: 300 });
    expect(closed.data).toEqual((await call('GET', `/v1/rounds/${closed.data.round_id}`)).body);
  });
});
