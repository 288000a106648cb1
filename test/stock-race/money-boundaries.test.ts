import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { roundRepository } from '../../src/games/engine/round-repository';
import { client, eventually, startTestApp, STORES, type TestApp, type TestOperator } from '../support/harness';

/*
 * Surface B money boundaries over HTTP: the stake as the JSON an operator sends (numbers written in
 * every legal and illegal way, for currencies with 0, 2 and 3 minor digits), currencies Intl does
 * and does not know, sessions of other operators. Every refusal must be a 4xx with a catalogue code
 * (docs/surface-b.md, Reserve), every acceptance exact to the minor unit; nothing may be a 5xx.
 */

// The clock never moves: the first round stays open for the whole file.
const WINDOW = 3_600_000;
const TTL = 600_000;

describe.each(STORES)('Stock Race money boundaries over Surface B on %s', (store) => {
  let t: TestApp;
  let op: TestOperator;
  let other: TestOperator;
  let call: ReturnType<typeof client>;
  let roundId: string;
  const clock = new FakeClock(Date.now());
  const sessionOf: Record<string, string> = {};
  let ms = 0;
  // A signed request is accepted once: each one gets a millisecond of its own.
  const stamp = () => ({ timestamp: clock.now() + ++ms });

  const launch = (as: ReturnType<typeof client>, currency: unknown) =>
    as('POST', '/v1/sessions/launch', { player_ref: 'p-money', currency, return_url: 'https://op.example/' }, stamp());

  beforeAll(async () => {
    t = await startTestApp({
      store,
      clock,
      env: {
        STOCK_RACE_BETTING_WINDOW_MS: String(WINDOW),
        STOCK_RACE_DURATION_MS: '2000',
        STOCK_RACE_TICK_MS: '500',
        STOCK_RACE_PAUSE_MS: '1000',
        SESSION_TTL_MS: String(TTL),
      },
    });
    op = await t.createOperator({
      settings: { currencies: ['EUR', 'JPY', 'KRW', 'BHD', 'KWD', 'TND', 'HUF'] },
    });
    other = await t.createOperator({ name: 'Other' });
    call = client(t.baseUrl, op, 'B');
    for (const currency of ['EUR', 'JPY', 'KRW', 'BHD', 'KWD', 'TND', 'HUF']) {
      const res = await launch(call, currency);
      expect(res.status, res.text).toBe(200);
      sessionOf[currency] = res.body.session_id;
    }
    roundId = (await eventually(async () => roundRepository.latest(t.app.db, 'stock_race')))!.id;
  });
  afterAll(async () => t?.close());

  /** A reserve whose stake is written into the body as raw JSON text, exactly as given. */
  const reserveRaw = (currency: string, stakeJson: string, selected: string[] = ['NVDA'], as = call) => {
    const raw =
      `{"session_id":${JSON.stringify(sessionOf[currency])},"round_id":${JSON.stringify(roundId)},` +
      `"selected_stocks":${JSON.stringify(selected)},"stake":${stakeJson},` +
      `"idempotency_key":${JSON.stringify(randomUUID())}}`;
    return as('POST', '/v1/bets/reserve', undefined, { ...stamp(), rawBody: raw });
  };

  describe('session currencies', () => {
    it.each([
      ['gold (XAU, a metal)', 'XAU', 'CURRENCY'],
      ['the "no currency" code XXX', 'XXX', 'CURRENCY'],
      ['the testing code XTS', 'XTS', 'CURRENCY'],
      ['an invented code ABC', 'ABC', 'CURRENCY'],
      ['CLF (a fund code, 4 digits in ISO; unknown to this ICU)', 'CLF', 'CURRENCY'],
      ['a known currency the operator has not enabled (USD)', 'USD', 'CURRENCY'],
      ['lowercase eur', 'eur', 'VALIDATION'],
      ['mixed case Eur', 'Eur', 'VALIDATION'],
      ['two letters', 'EU', 'VALIDATION'],
      ['four letters', 'EURO', 'VALIDATION'],
      ['a number', 978, 'VALIDATION'],
      ['null', null, 'VALIDATION'],
    ])('refuses %s with a 400', async (_what, currency, kind) => {
      const res = await launch(call, currency);
      expect(res.status, res.text).toBe(400);
      expect(res.body.error).toBe(kind === 'VALIDATION' ? 'VALIDATION_FAILED' : 'CURRENCY_NOT_ALLOWED');
    });
  });

  describe('stakes as JSON numbers', () => {
    // [currency, stake as raw JSON, expected stake echo | error code]
    const cases: [string, string, number | string][] = [
      // EUR, 2 digits: bounds 1.00 .. 1000.00
      ['EUR', '10', 10],
      ['EUR', '10.0', 10],
      ['EUR', '10.00', 10],
      ['EUR', '10.000', 10],
      ['EUR', '1e2', 100],
      ['EUR', '1E2', 100],
      ['EUR', '1.5e1', 15],
      ['EUR', '1000e-3', 1],
      ['EUR', '0.29', 'STAKE_OUT_OF_RANGE'],
      ['EUR', '1.01', 1.01],
      ['EUR', '999.99', 999.99],
      ['EUR', '1000', 1000],
      ['EUR', '1000.01', 'STAKE_OUT_OF_RANGE'],
      ['EUR', '0.99', 'STAKE_OUT_OF_RANGE'],
      ['EUR', '1.005', 'STAKE_PRECISION'],
      ['EUR', '1.0000000001', 'STAKE_PRECISION'],
      ['EUR', '12.339999999999999999', 'VALIDATION_FAILED'],
      ['EUR', '0', 'STAKE_OUT_OF_RANGE'],
      ['EUR', '-0', 'STAKE_OUT_OF_RANGE'],
      ['EUR', '-1', 'STAKE_OUT_OF_RANGE'],
      ['EUR', '-10.5', 'STAKE_OUT_OF_RANGE'],
      ['EUR', '1e400', 'VALIDATION_FAILED'],
      ['EUR', '-1e400', 'VALIDATION_FAILED'],
      ['EUR', '1e-400', 'VALIDATION_FAILED'],
      ['EUR', '1e300', 'STAKE_OUT_OF_RANGE'],
      ['EUR', '9007199254740993', 'VALIDATION_FAILED'],
      ['EUR', '90071992547409.91', 'VALIDATION_FAILED'],
      ['EUR', '"10"', 'VALIDATION_FAILED'],
      ['EUR', '" 10"', 'VALIDATION_FAILED'],
      ['EUR', 'null', 'VALIDATION_FAILED'],
      ['EUR', 'true', 'VALIDATION_FAILED'],
      ['EUR', '[10]', 'VALIDATION_FAILED'],
      ['EUR', '{"amount":10}', 'VALIDATION_FAILED'],
      ['EUR', '.5', 'MALFORMED_JSON'],
      ['EUR', '10.', 'MALFORMED_JSON'],
      ['EUR', '+10', 'MALFORMED_JSON'],
      ['EUR', '010', 'MALFORMED_JSON'],
      ['EUR', '0x10', 'MALFORMED_JSON'],
      ['EUR', 'NaN', 'MALFORMED_JSON'],
      ['EUR', 'Infinity', 'MALFORMED_JSON'],
      // JPY and KRW, no minor unit: bounds 100 .. 100000
      ['JPY', '100', 100],
      ['JPY', '100.0', 100],
      ['JPY', '1e2', 100],
      ['JPY', '100000', 100000],
      ['JPY', '100001', 'STAKE_OUT_OF_RANGE'],
      ['JPY', '99', 'STAKE_OUT_OF_RANGE'],
      ['JPY', '0.1', 'STAKE_PRECISION'],
      ['JPY', '150.5', 'STAKE_PRECISION'],
      ['JPY', '100.01', 'STAKE_PRECISION'],
      ['KRW', '12345', 12345],
      ['KRW', '12345.5', 'STAKE_PRECISION'],
      ['HUF', '500', 500],
      ['HUF', '500.5', 'STAKE_PRECISION'],
      // BHD, KWD and TND, three digits: bounds 1.000 .. 1000.000
      ['BHD', '1.001', 1.001],
      ['BHD', '1.0005', 'STAKE_PRECISION'],
      ['BHD', '0.999', 'STAKE_OUT_OF_RANGE'],
      ['KWD', '999.999', 999.999],
      ['KWD', '1000.001', 'STAKE_OUT_OF_RANGE'],
      ['TND', '12.345', 12.345],
      ['TND', '12.3456', 'STAKE_PRECISION'],
    ];
    it.each(cases)('%s stake %s → %s', async (currency, stake, expected) => {
      const res = await reserveRaw(currency, stake);
      if (typeof expected === 'number') {
        expect(res.status, res.text).toBe(200);
        expect(res.body).toMatchObject({ stake: expected, currency, status: 'reserved' });
        // The bet row holds the exact minor units the decimal names.
        const row = await t.app.db.get<{ amount: number }>('SELECT amount FROM bets WHERE id = ?', [res.body.bet_id]);
        const digits = { EUR: 2, JPY: 0, KRW: 0, HUF: 0, BHD: 3, KWD: 3, TND: 3 }[currency]!;
        expect(Number(row!.amount)).toBe(Math.round(expected * 10 ** digits));
      } else {
        expect(res.status, res.text).toBe(400);
        expect(res.body.error, res.text).toBe(expected);
      }
    });

    it('quotes potential_payout floored to the minor unit of each currency', async () => {
      // 3 of 8 at 95%: stake × 8 × 0.95 / 3 = stake × 2.5333…
      const yen = await reserveRaw('JPY', '1000', ['NVDA', 'TSLA', 'AAPL']);
      expect(yen.body.potential_payout).toBe(2533);
      const bhd = await reserveRaw('BHD', '1.001', ['NVDA', 'TSLA', 'AAPL']);
      // 1001 × 7.6 / 3 = 2535.866… → 2535 fils
      expect(bhd.body.potential_payout).toBe(2.535);
      const eur = await reserveRaw('EUR', '10.01', ['NVDA', 'TSLA', 'AAPL']);
      // 1001 × 7.6 / 3 → 25.35
      expect(eur.body.potential_payout).toBe(25.35);
      // The decimal on the wire has the currency's digits at most.
      expect(yen.text).toMatch(/"potential_payout":2533[,}]/);
      expect(bhd.text).toMatch(/"potential_payout":2\.535[,}]/);
    });
  });

  describe('selections', () => {
    it.each([
      ['lowercase symbol', ['nvda']],
      ['symbol with a space', [' NVDA']],
      ['the same stock twice', ['NVDA', 'NVDA']],
      ['an empty array', []],
      ['all eight stocks', ['AAPL', 'AMZN', 'GOOG', 'META', 'MSFT', 'NFLX', 'NVDA', 'TSLA']],
      ['a symbol of another deployment', ['BTC']],
    ])('refuses %s with 400 INVALID_SELECTION', async (_what, selected) => {
      const res = await reserveRaw('EUR', '10', selected);
      expect(res.status, res.text).toBe(400);
      expect(res.body.error).toBe('INVALID_SELECTION');
    });

    it('refuses a non-string symbol and more than 64 entries with 400 VALIDATION_FAILED', async () => {
      const raw = (selected: string) =>
        call('POST', '/v1/bets/reserve', undefined, {
          ...stamp(),
          rawBody:
            `{"session_id":"${sessionOf.EUR}","round_id":"${roundId}","selected_stocks":${selected},` +
            `"stake":10,"idempotency_key":"${randomUUID()}"}`,
        });
      for (const selected of ['[1]', '[null]', '"NVDA"', JSON.stringify(Array(65).fill('NVDA'))]) {
        const res = await raw(selected);
        expect(res.status, `${selected}: ${res.text}`).toBe(400);
        expect(res.body.error).toBe('VALIDATION_FAILED');
      }
    });
  });

  describe('sessions', () => {
    it("refuses another operator's session (404) even for a currency both allow", async () => {
      const res = await reserveRaw('EUR', '10', ['NVDA'], client(t.baseUrl, other, 'B'));
      expect(res.status, res.text).toBe(404);
      expect(res.body.error).toBe('SESSION_NOT_FOUND');
    });

    it('takes the stake in the session currency: a EUR-looking stake in a JPY session is STAKE_PRECISION', async () => {
      const res = await reserveRaw('JPY', '10.5');
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('STAKE_PRECISION');
    });
  });

  describe('operator limits at the edge of what a double carries', () => {
    // An operator may set stake limits and a payout cap up to 2^53 − 1 (the settings schema allows
    // it). A stake of 9300000000000.13 EUR (15 significant digits, read exactly) on 1 of 8 stocks at
    // 100% RTP would pay 74400000000001.04 EUR, which a JSON number cannot carry exactly. The payout
    // is capped at the largest amount every surface carries exactly (10^15 − 1 minor units), so the
    // reserve is answered with that, never with a 5xx, and the round's close cannot fail on it
    // (src/games/stock-race/stock-race-game.boundaries.test.ts).
    it('caps a payout a JSON number cannot carry at 10^15 − 1 minor units, and answers the reserve', async () => {
      const big = await t.createOperator({
        name: 'Huge limits',
        settings: {
          stake_limits: { EUR: { min: 100, max: Number.MAX_SAFE_INTEGER } },
          stock_race: { rtp_bp: 10_000, max_payout_major: Number.MAX_SAFE_INTEGER },
          compliance: {
            large_stake: 0,
            large_payout: 0,
            bets_per_minute_per_player: 0,
            machine_timing_window_ms: 0,
            machine_timing_streak: 0,
            max_session_places: 0,
            session_places_window_ms: 600_000,
          },
        },
      });
      const bigCall = client(t.baseUrl, big, 'B');
      const session = (await launch(bigCall, 'EUR')).body.session_id;
      const res = await bigCall(
        'POST',
        '/v1/bets/reserve',
        {
          session_id: session,
          round_id: roundId,
          selected_stocks: ['NVDA'],
          stake: 9300000000000.13,
          idempotency_key: randomUUID(),
        },
        stamp(),
      );
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ stake: 9300000000000.13, potential_payout: 9999999999999.99 });
      expect(res.text).toContain('"potential_payout":9999999999999.99,');
      const row = await t.app.db.get<{ amount: number }>('SELECT amount FROM bets WHERE id = ?', [res.body.bet_id]);
      expect(Number(row!.amount)).toBe(930000000000013);
    });
  });
  describe('session expiry', () => {
    // Last in the file: it moves the clock (still well inside the betting window).
    it('takes a reserve at expires_at − 1 ms and refuses one at expires_at with 409 SESSION_EXPIRED', async () => {
      const launched = await launch(call, 'EUR');
      sessionOf.LATE = launched.body.session_id;
      expect(launched.body.expires_at).toBe(clock.now() + TTL);
      const late = (stakeJson: string) => {
        const raw =
          `{"session_id":"${sessionOf.LATE}","round_id":"${roundId}","selected_stocks":["NVDA"],` +
          `"stake":${stakeJson},"idempotency_key":"${randomUUID()}"}`;
        return call('POST', '/v1/bets/reserve', undefined, { timestamp: clock.now(), rawBody: raw });
      };
      clock.advance(TTL - 1);
      const inside = await late('10');
      expect(inside.status, inside.text).toBe(200);
      clock.advance(1);
      const expired = await late('11');
      expect(expired.status, expired.text).toBe(409);
      expect(expired.body.error).toBe('SESSION_EXPIRED');
    });
  });
});
