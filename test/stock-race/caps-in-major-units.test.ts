import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { roundRepository } from '../../src/games/engine/round-repository';
import { decidedLate } from '../support/slow-decision';
import { client, eventually, startTestApp, withSeeds, type TestApp, type TestOperator } from '../support/harness';

/*
 * Stock Race money over Surface B, seen by operators whose caps are written in major units with more
 * decimals than their currency has (a value a script computed: 377.85 read back as
 * 377.84999999999997). docs/surface-b.md: caps are converted to minor units exactly, a payout is
 * "capped at" the cap and a round's winners stay "within the cap"; src/money/currency.ts: floats are
 * never multiplied. A cap converted by float multiplication came out one minor unit above the
 * configured value (377.84999999999997 × 100 = 37785 in a double), so the quote, the payout and the
 * settle body passed the cap by one cent, and a round's winners the per-round cap.
 */

// sha256("surface-b-test-0"): NVDA wins at +8.85%.
const SEED_NVDA = '75fed4db566aa59dc746e89f1a940794d6ac7af868d356f9f13608cabc3c62b1';
const WINDOW = 5_000;
const RACE = 2_000;

/** A JSON number token of a response text as integer minor units, by string arithmetic only. */
function minorOf(text: string, field: string, exponent: number): bigint {
  const m = new RegExp(`"${field}":(-?)(\\d+)(?:\\.(\\d+))?[,}]`).exec(text);
  if (!m) throw new Error(`no plain decimal ${field} in ${text}`);
  const fraction = m[3] ?? '';
  if (fraction.length > exponent) throw new Error(`${field} in ${text} has more decimals than ${exponent}`);
  const minor = BigInt(m[2]! + fraction.padEnd(exponent, '0'));
  return m[1] === '-' ? -minor : minor;
}

describe('Stock Race caps in major units with more decimals than the currency (sqlite)', () => {
  let t: TestApp;
  let roundId: string;
  const clock = new FakeClock(Date.now());
  let ms = 0;
  let perBet: { get: (path: string) => ReturnType<ReturnType<typeof client>>; betId: string };
  let perRound: { get: (path: string) => ReturnType<ReturnType<typeof client>>; betIds: string[] };
  // A signed request is accepted once: each one gets a millisecond of its own.
  const stamp = () => ({ timestamp: clock.now() + ++ms });

  beforeAll(async () => {
    t = await startTestApp({
      store: 'sqlite',
      clock,
      beforeStart: withSeeds('stock_race', [SEED_NVDA]),
      env: {
        STOCK_RACE_BETTING_WINDOW_MS: String(WINDOW),
        STOCK_RACE_DURATION_MS: String(RACE),
        STOCK_RACE_TICK_MS: '500',
        STOCK_RACE_PAUSE_MS: '1000',
        // Settle rows stay pending: what the test reads is the body they carry.
        WALLET_RETRY_SCHEDULE_MS: '3600000',
      },
    });
    roundId = (await eventually(async () => roundRepository.latest(t.app.db, 'stock_race')))!.id;
  });
  afterAll(async () => t?.close());

  async function operatorWith(name: string, stockRace: Record<string, number>) {
    const op: TestOperator = await t.createOperator({
      name,
      walletUrl: 'http://127.0.0.1:9/wallet',
      settings: { stock_race: { rtp_bp: 9500, ...stockRace } },
    });
    const call = client(t.baseUrl, op, 'B');
    const launch = { player_ref: `p-${name}`, currency: 'EUR', return_url: 'https://op.example/' };
    const session = (await call('POST', '/v1/sessions/launch', launch, stamp())).body.session_id as string;
    const reserve = (stake: number) =>
      call(
        'POST',
        '/v1/bets/reserve',
        { session_id: session, round_id: roundId, selected_stocks: ['NVDA'], stake, idempotency_key: randomUUID() },
        stamp(),
      );
    const get = (path: string) => call('GET', path, undefined, stamp());
    return { reserve, get };
  }

  it('quotes, pays and settles at most a per-bet cap of 377.84999999999997 EUR: 377.84, not 377.85', async () => {
    // Reserved now, read after the close (the last test below closes the round).
    const op = await operatorWith('per-bet', { max_payout_major: 377.84999999999997 });
    const res = await op.reserve(100); // 100 × 8 × 95% = 760.00, capped
    perBet = { ...op, betId: res.body.bet_id as string };
    expect(res.status, res.text).toBe(200);
    expect(minorOf(res.text, 'potential_payout', 2)).toBe(37784n);
  });

  it('reserves two bets quoted 7600.00 EUR each under a per-round cap of 5779.0599999999995 EUR', async () => {
    const op = await operatorWith('per-round', { max_payout_per_round_major: 5779.0599999999995 });
    const a = await op.reserve(1000); // quoted 7600.00
    const b = await op.reserve(1000); // quoted 7600.00
    perRound = { ...op, betIds: [a.body.bet_id as string, b.body.bet_id as string] };
    expect([a.status, b.status], a.text + b.text).toEqual([200, 200]);
  });

  it('after the close: the bet, its settle body and the round total are within the caps', async () => {
    await clock.advanceAsync(WINDOW);
    await eventually(async () => (await roundRepository.byId(t.app.db, roundId))?.status === 'running');
    await clock.advanceAsync(RACE, () => new Promise((r) => setTimeout(r, 20)));
    await eventually(async () => (await roundRepository.byId(t.app.db, roundId))?.status === 'closed');

    const bet = await perBet.get(`/v1/bets/${perBet.betId}`);
    expect(bet.body.status, bet.text).toBe('won');
    expect(minorOf(bet.text, 'payout', 2)).toBe(37784n);
    const settle = (await perBet.get('/v1/settlements')).text;
    expect(minorOf(settle, 'payout', 2)).toBe(37784n);

    let total = 0n;
    for (const id of perRound.betIds) {
      const read = await perRound.get(`/v1/bets/${id}`);
      expect(read.body.status, read.text).toBe('won');
      total += minorOf(read.text, 'payout', 2);
    }
    expect(total <= 577905n, `round total ${total} cents over the cap of 577905`).toBe(true);
    // The same share for each: floor(760000 × 577905 / 1520000) = 288952.
    const settled = (await perRound.get('/v1/settlements')).body.settlements as { body: { payout: number } }[];
    expect(settled.map((s) => s.body.payout)).toEqual([2889.52, 2889.52]);
  });
});

/**
 * A reservation whose stake raises a compliance flag is written on the full path, after the one-unit
 * command handed it over. Writing it takes time: here the clock passes the betting window's close the
 * moment the compliance settings are read (no timer runs, so the round stays open in the store).
 */
describe.each(['sqlite', 'postgres'] as const)('a flagged reservation decided on the full path (%s)', (store) => {
  let t: TestApp;
  const clock = new FakeClock(Date.now());
  let ms = 0;

  beforeAll(async () => {
    t = await startTestApp({
      store,
      clock,
      beforeStart: withSeeds('stock_race', [SEED_NVDA]),
      env: { STOCK_RACE_BETTING_WINDOW_MS: String(WINDOW), STOCK_RACE_DURATION_MS: String(RACE) },
    });
  });
  afterAll(async () => t?.close());

  it('is taken when it was asked for inside the betting window, however long writing it takes', async () => {
    const round = (await eventually(async () => roundRepository.latest(t.app.db, 'stock_race')))!;
    const op = await t.createOperator({
      walletUrl: 'http://127.0.0.1:9/wallet',
      settings: { compliance: { large_stake: 1 } },
    });
    const call = client(t.baseUrl, op, 'B');
    const stamp = () => ({ timestamp: clock.now() + ++ms });
    const launch = { player_ref: 'big', currency: 'EUR', return_url: 'https://op.example/' };
    const session = (await call('POST', '/v1/sessions/launch', launch, stamp())).body.session_id as string;
    expect(clock.now()).toBeLessThan(round.bettingClosesAt);
    const body = {
      session_id: session,
      round_id: round.id,
      selected_stocks: ['NVDA'],
      stake: 10,
      idempotency_key: 'k1',
    };
    const { result: res, jumped } = await decidedLate(
      t,
      clock,
      () => round.bettingClosesAt + 1,
      () => call('POST', '/v1/bets/reserve', body, stamp()),
    );
    expect(jumped).toBe(true);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'reserved', stake: 10, currency: 'EUR' });
  });
});
