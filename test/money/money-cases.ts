import type { MoneyRoute, MoneyWorld, OperatorRole } from './money-world';

/**
 * The money cases, each run on every store with one expected answer. Bodies and rows are compared
 * after normalising what differs between runs (see normalise in equivalence.test.ts): UUIDs read
 * `<uuid>` (session ids `ses_<uuid>`, round ids `rnd_<uuid>`), instants are milliseconds since the
 * world's start (`<t+N>` inside a message). MONEY_RECORD=1 prints what a run saw, case by case.
 */

/** Where in the world's timeline a case runs (equivalence.test.ts moves the world between them). */
export type Phase =
  /** Both rounds take bets; the clock has not moved. */
  | 'open'
  /** The Crash round runs and shows 1.12x; the Stock Race round's window has closed. */
  | 'running'
  /** The Crash engine is stopped one millisecond before the crash instant (1.26x). */
  | 'before-crash'
  /** Same, at the crash instant itself. */
  | 'crash-instant'
  /** Same, past the engine's staleness limit: the round is interrupted. */
  | 'interrupted'
  /** An engine took the Crash round over again and voided it; the Stock Race round is settled. */
  | 'voided';

export interface BetRowView {
  status: string;
  amount: number;
  payout: number | null;
  cashout_multiplier: number | null;
  cashout_kind: string | null;
  auto_cashout: number | null;
  potential_payout: number | null;
  currency: string | null;
  selections: string | null;
  /** Compliance rules flagged on this bet. */
  flags: string[];
}

export interface Observation {
  status: number;
  /** The idempotent-replay header, or null without one. */
  replay: string | null;
  body: unknown;
  /** The player's bets with this operator after the call, oldest first. */
  bets: BetRowView[];
  /** Status stored under the call's idempotency key, null when nothing is stored. */
  keyStatus: number | null;
}

export interface MoneyCase {
  name: string;
  phase: Phase;
  route: MoneyRoute;
  operator: OperatorRole;
  /** The case's own player: its rows are the bets of this player with this operator. */
  player: string;
  body: (w: MoneyWorld) => unknown;
  /** The Idempotency-Key header (Surface A); null sends none; undefined: `key-<name>`. */
  key?: string | null;
  /** Sends the request this many times at once, all signed alike: one effect, every answer alike. */
  concurrent?: number;
  /** Sends this first (the case's key), then the case's own request. */
  before?: (w: MoneyWorld) => unknown;
  expect: Observation;
}

const crashBet = (status: string, amount: number, extra: Partial<BetRowView> = {}): BetRowView => ({
  status,
  amount,
  payout: null,
  cashout_multiplier: null,
  cashout_kind: null,
  auto_cashout: null,
  potential_payout: 10_000_000,
  currency: null,
  selections: null,
  flags: [],
  ...extra,
});

const stockBet = (amount: number, potential: number, selections: string[], extra: Partial<BetRowView> = {}) => ({
  status: 'reserved',
  amount,
  payout: null,
  cashout_multiplier: null,
  cashout_kind: null,
  auto_cashout: null,
  potential_payout: potential,
  currency: 'EUR',
  selections: JSON.stringify(selections),
  flags: [],
  ...extra,
});

/** An answer with a body of its own: a bet placed, reserved or cashed out, or a replay of one. */
const answered = (
  status: number,
  body: unknown,
  bets: BetRowView[],
  replay: string | null = null,
  keyStatus: number | null = status,
): Observation => ({ status, replay, body, bets, keyStatus });

const errorA = (
  status: number,
  code: string,
  error: string,
  bets: BetRowView[] = [],
  keyStatus: number | null = status,
) => ({
  status,
  replay: null,
  body: { error, code },
  bets,
  keyStatus,
});

const errorB = (
  status: number,
  code: string,
  message: string,
  bets: BetRowView[] = [],
  keyStatus: number | null = status,
) => ({
  status,
  replay: null,
  body: { error: code, message },
  bets,
  keyStatus,
});

const reserve =
  (name: string, stake: number, selected: string[] = ['NVDA', 'TSLA']) =>
  (w: MoneyWorld) => ({
    session_id: w.sessions[name],
    round_id: w.stockRoundId,
    selected_stocks: selected,
    stake,
    idempotency_key: `reserve-${name}`,
  });

export const CASES: MoneyCase[] = [
  // Crash place-bet: amount bounds (schema 1..1 000 000, and the operator's per-bet payout cap).
  {
    name: 'place: amount 1, the lowest',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-min',
    body: () => ({ external_user_id: 'a-min', amount: 1 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-min', round_number: 1, amount: 1, auto_cashout: null },
      [crashBet('active', 1)],
    ),
  },
  {
    name: 'place: amount 0',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-zero',
    body: () => ({ external_user_id: 'a-zero', amount: 0 }),
    expect: errorA(400, 'VALIDATION_FAILED', 'field "amount" must be an integer from 1 to 1000000', [], null),
  },
  {
    name: 'place: amount 1 000 000, the highest',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-max',
    body: () => ({ external_user_id: 'a-max', amount: 1_000_000 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-max', round_number: 1, amount: 1_000_000, auto_cashout: null },
      [crashBet('active', 1_000_000, { flags: ['large_stake'] })],
    ),
  },
  {
    name: 'place: amount 1 000 001',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-over',
    body: () => ({ external_user_id: 'a-over', amount: 1_000_001 }),
    expect: errorA(400, 'VALIDATION_FAILED', 'field "amount" must be an integer from 1 to 1000000', [], null),
  },
  {
    name: 'place: amount 1.5',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-frac',
    body: () => ({ external_user_id: 'a-frac', amount: 1.5 }),
    expect: errorA(400, 'VALIDATION_FAILED', 'field "amount" must be an integer from 1 to 1000000', [], null),
  },
  {
    name: 'place: amount equal to the per-bet payout cap',
    phase: 'open',
    route: 'place-bet',
    operator: 'betCapped',
    player: 'a-cap',
    body: () => ({ external_user_id: 'a-cap', amount: 5_000 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-cap', round_number: 1, amount: 5000, auto_cashout: null },
      [crashBet('active', 5000, { potential_payout: 5000 })],
    ),
  },
  {
    name: 'place: amount one over the per-bet payout cap',
    phase: 'open',
    route: 'place-bet',
    operator: 'betCapped',
    player: 'a-cap-over',
    body: () => ({ external_user_id: 'a-cap-over', amount: 5_001 }),
    expect: errorA(400, 'STAKE_OUT_OF_RANGE', "amount exceeds this operator's maximum payout per bet (5000)"),
  },
  {
    name: 'place: auto cash-out 1.01, the lowest',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-auto-min',
    body: () => ({ external_user_id: 'a-auto-min', amount: 100, auto_cashout: 1.01 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-auto-min', round_number: 1, amount: 100, auto_cashout: 1.01 },
      [crashBet('active', 100, { auto_cashout: 101 })],
    ),
  },
  {
    name: 'place: auto cash-out 1.00',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-auto-1',
    body: () => ({ external_user_id: 'a-auto-1', amount: 100, auto_cashout: 1 }),
    expect: errorA(
      400,
      'VALIDATION_FAILED',
      'field "auto_cashout" must be null or a number from 1.01 to 1000000 with at most 2 decimals',
      [],
      null,
    ),
  },
  {
    name: 'place: auto cash-out with 3 decimals',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-auto-3',
    body: () => ({ external_user_id: 'a-auto-3', amount: 100, auto_cashout: 1.101 }),
    expect: errorA(400, 'VALIDATION_FAILED', 'field "auto_cashout" must have at most 2 decimals', [], null),
  },
  {
    name: 'place: an unknown field',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-field',
    body: () => ({ external_user_id: 'a-field', amount: 100, currency: 'EUR' }),
    expect: errorA(400, 'UNKNOWN_FIELD', 'unknown field "currency": this endpoint does not accept it', [], null),
  },
  {
    name: 'place: no Idempotency-Key',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-nokey',
    key: null,
    body: () => ({ external_user_id: 'a-nokey', amount: 100 }),
    expect: errorA(400, 'IDEMPOTENCY_KEY_MISSING', 'the Idempotency-Key header is required on this POST', [], null),
  },
  // Compliance flags raised on the bet's own write.
  {
    name: 'place: a large stake is flagged',
    phase: 'open',
    route: 'place-bet',
    operator: 'flagged',
    player: 'a-large',
    body: () => ({ external_user_id: 'a-large', amount: 10_000 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-large', round_number: 1, amount: 10_000, auto_cashout: null },
      [crashBet('active', 10_000, { flags: ['large_stake'] })],
    ),
  },
  {
    name: 'place: one under the large stake is not',
    phase: 'open',
    route: 'place-bet',
    operator: 'flagged',
    player: 'a-small',
    body: () => ({ external_user_id: 'a-small', amount: 9_999 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-small', round_number: 1, amount: 9999, auto_cashout: null },
      [crashBet('active', 9999)],
    ),
  },
  {
    name: 'place: the third bet in a minute is flagged (velocity)',
    phase: 'open',
    route: 'place-bet',
    operator: 'flagged',
    player: 'a-fast',
    before: () => [
      { external_user_id: 'a-fast', amount: 10 },
      { external_user_id: 'a-fast', amount: 11 },
    ],
    body: () => ({ external_user_id: 'a-fast', amount: 12 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-fast', round_number: 1, amount: 12, auto_cashout: null },
      [crashBet('active', 10), crashBet('active', 11), crashBet('active', 12, { flags: ['bet_velocity'] })],
    ),
  },
  // Idempotency.
  {
    name: 'place: same key, same body: the stored answer again',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-replay',
    before: () => [{ amount: 300, external_user_id: 'a-replay' }],
    body: () => ({ external_user_id: 'a-replay', amount: 300 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-replay', round_number: 1, amount: 300, auto_cashout: null },
      [crashBet('active', 300)],
      'true',
    ),
  },
  {
    name: 'place: same key, another body',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-reuse',
    before: () => [{ external_user_id: 'a-reuse', amount: 300 }],
    body: () => ({ external_user_id: 'a-reuse', amount: 301 }),
    expect: errorA(
      409,
      'IDEMPOTENCY_KEY_REUSED',
      'idempotency key reused with different body',
      [crashBet('active', 300)],
      200,
    ),
  },
  {
    name: 'place: 100 concurrent duplicates',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-dupes',
    concurrent: 100,
    body: () => ({ external_user_id: 'a-dupes', amount: 700 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-dupes', round_number: 1, amount: 700, auto_cashout: null },
      [crashBet('active', 700)],
      '99 of 100',
    ),
  },
  // Bets the running round settles by itself (see FINAL_ROWS): auto cash-out, per-bet and per-round caps.
  {
    name: 'place: auto cash-out at 1.05',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-auto',
    body: () => ({ external_user_id: 'a-auto', amount: 1_000, auto_cashout: 1.05 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-auto', round_number: 1, amount: 1000, auto_cashout: 1.05 },
      [crashBet('active', 1000, { auto_cashout: 105 })],
    ),
  },
  {
    name: 'place: under the per-bet cap until 1.07x',
    phase: 'open',
    route: 'place-bet',
    operator: 'betCapped',
    player: 'a-forced',
    body: () => ({ external_user_id: 'a-forced', amount: 4_700 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-forced', round_number: 1, amount: 4700, auto_cashout: null },
      [crashBet('active', 4700, { potential_payout: 5000 })],
    ),
  },
  {
    name: 'place: first of two under the per-round cap',
    phase: 'open',
    route: 'place-bet',
    operator: 'roundCapped',
    player: 'a-round-1',
    body: () => ({ external_user_id: 'a-round-1', amount: 1_000 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-round-1', round_number: 1, amount: 1000, auto_cashout: null },
      [crashBet('active', 1000)],
    ),
  },
  {
    name: 'place: second of two under the per-round cap',
    phase: 'open',
    route: 'place-bet',
    operator: 'roundCapped',
    player: 'a-round-2',
    body: () => ({ external_user_id: 'a-round-2', amount: 1_000 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-round-2', round_number: 1, amount: 1000, auto_cashout: null },
      [crashBet('active', 1000)],
    ),
  },
  {
    name: 'place: a bet to cash out by hand',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-hand',
    body: () => ({ external_user_id: 'a-hand', amount: 999 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-hand', round_number: 1, amount: 999, auto_cashout: null },
      [crashBet('active', 999)],
    ),
  },
  {
    name: 'place: a bet to cash out just before the crash',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-late',
    body: () => ({ external_user_id: 'a-late', amount: 999 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-late', round_number: 1, amount: 999, auto_cashout: null },
      [crashBet('active', 999)],
    ),
  },
  {
    name: 'place: a bet to cash out at the crash instant',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-instant',
    body: () => ({ external_user_id: 'a-instant', amount: 999 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-instant', round_number: 1, amount: 999, auto_cashout: null },
      [crashBet('active', 999)],
    ),
  },
  {
    name: 'place: a bet left in the round',
    phase: 'open',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-left',
    body: () => ({ external_user_id: 'a-left', amount: 250 }),
    expect: answered(
      200,
      { bet_id: '<uuid>', external_user_id: 'a-left', round_number: 1, amount: 250, auto_cashout: null },
      [crashBet('active', 250)],
    ),
  },
  // Crash cash-out refusals.
  {
    name: 'cashout: before the round runs',
    phase: 'open',
    route: 'cashout',
    operator: 'plain',
    player: 'a-hand',
    body: (w) => ({ bet_id: w.bets['place: a bet to cash out by hand'] }),
    expect: errorA(
      409,
      'ROUND_NOT_RUNNING',
      'round 1 has not started yet; cash-out opens when the multiplier starts climbing',
      [crashBet('active', 999)],
    ),
  },
  {
    name: 'cashout: an unknown bet',
    phase: 'open',
    route: 'cashout',
    operator: 'plain',
    player: 'nobody',
    body: () => ({ bet_id: '00000000-0000-4000-8000-000000000000' }),
    expect: errorA(404, 'BET_NOT_FOUND', 'no Crash bet <uuid> for this operator'),
  },
  {
    name: "cashout: another operator's bet",
    phase: 'open',
    route: 'cashout',
    operator: 'other',
    player: 'a-hand',
    body: (w) => ({ bet_id: w.bets['place: a bet to cash out by hand'] }),
    expect: errorA(404, 'BET_NOT_FOUND', 'no Crash bet <uuid> for this operator'),
  },
  {
    name: 'cashout: a bet id that is no UUID',
    phase: 'open',
    route: 'cashout',
    operator: 'plain',
    player: 'nobody',
    body: () => ({ bet_id: 'bet-1' }),
    expect: errorA(400, 'VALIDATION_FAILED', 'field "bet_id" must be the UUID of a bet this operator placed', [], null),
  },
  {
    name: 'cashout: no Idempotency-Key',
    phase: 'open',
    route: 'cashout',
    operator: 'plain',
    player: 'a-hand',
    key: null,
    body: (w) => ({ bet_id: w.bets['place: a bet to cash out by hand'] }),
    expect: errorA(
      400,
      'IDEMPOTENCY_KEY_MISSING',
      'the Idempotency-Key header is required on this POST',
      [crashBet('active', 999)],
      null,
    ),
  },

  // Stock Race reserve: stake bounds (EUR defaults 1.00 .. 1000.00), selections, sessions, rounds.
  {
    name: 'reserve: stake 1.00, the lowest',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-min',
    body: reserve('b-min', 1),
    expect: answered(
      200,
      {
        bet_id: '<uuid>',
        round_id: 'rnd_<uuid>',
        round_number: 1,
        session_id: 'ses_<uuid>',
        player_ref: 'b-min',
        status: 'reserved',
        stake: 1,
        currency: 'EUR',
        selected_stocks: ['NVDA', 'TSLA'],
        potential_payout: 3.8,
        placed_at: 0,
      },
      [stockBet(100, 380, ['NVDA', 'TSLA'])],
    ),
  },
  {
    name: 'reserve: stake 0.99',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-under',
    body: reserve('b-under', 0.99),
    expect: errorB(400, 'STAKE_OUT_OF_RANGE', 'stake 0.99 EUR is out of range: 1.00 to 1000.00 EUR'),
  },
  {
    name: 'reserve: stake 1000.00, the highest',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-max',
    body: reserve('b-max', 1000),
    expect: answered(
      200,
      {
        bet_id: '<uuid>',
        round_id: 'rnd_<uuid>',
        round_number: 1,
        session_id: 'ses_<uuid>',
        player_ref: 'b-max',
        status: 'reserved',
        stake: 1000,
        currency: 'EUR',
        selected_stocks: ['NVDA', 'TSLA'],
        potential_payout: 3800,
        placed_at: 0,
      },
      [stockBet(100_000, 380_000, ['NVDA', 'TSLA'])],
    ),
  },
  {
    name: 'reserve: stake 1000.01',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-over',
    body: reserve('b-over', 1000.01),
    expect: errorB(400, 'STAKE_OUT_OF_RANGE', 'stake 1000.01 EUR is out of range: 1.00 to 1000.00 EUR'),
  },
  {
    name: 'reserve: stake 0',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-zero',
    body: reserve('b-zero', 0),
    expect: errorB(400, 'STAKE_OUT_OF_RANGE', 'stake must be positive: 1.00 to 1000.00 EUR'),
  },
  {
    name: 'reserve: stake with 3 decimals',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-precise',
    body: reserve('b-precise', 1.005),
    expect: errorB(400, 'STAKE_PRECISION', 'stake 1.005 has more decimals than EUR allows (2)'),
  },
  {
    name: 'reserve: no stock selected',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-none',
    body: reserve('b-none', 10, []),
    expect: errorB(400, 'INVALID_SELECTION', 'selected_stocks is empty: pick at least one stock'),
  },
  {
    name: 'reserve: a stock twice',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-twice',
    body: reserve('b-twice', 10, ['NVDA', 'NVDA']),
    expect: errorB(400, 'INVALID_SELECTION', 'selected_stocks lists NVDA more than once'),
  },
  {
    name: 'reserve: an unknown stock',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-unknown',
    body: reserve('b-unknown', 10, ['NVDA', 'IBM']),
    expect: errorB(
      400,
      'INVALID_SELECTION',
      'unknown stock symbol(s) IBM; this round races AAPL, AMZN, GOOG, META, MSFT, NFLX, NVDA, TSLA',
    ),
  },
  {
    name: 'reserve: every stock',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-all',
    body: reserve('b-all', 10, ['AAPL', 'AMZN', 'GOOG', 'META', 'MSFT', 'NFLX', 'NVDA', 'TSLA']),
    expect: errorB(400, 'INVALID_SELECTION', 'selected_stocks names all 8 stocks; leave at least one out'),
  },
  {
    name: 'reserve: an unknown session',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-nosession',
    body: (w) => ({ ...(reserve('b-min', 10)(w) as object), session_id: 'ses_unknown', idempotency_key: 'nosession' }),
    expect: errorB(404, 'SESSION_NOT_FOUND', 'no session ses_unknown for this operator'),
  },
  {
    name: "reserve: another operator's session",
    phase: 'open',
    route: 'reserve',
    operator: 'other',
    player: 'b-min',
    body: (w) => ({ ...(reserve('b-min', 10)(w) as object), idempotency_key: 'foreign' }),
    expect: errorB(404, 'SESSION_NOT_FOUND', 'no session ses_<uuid> for this operator'),
  },
  {
    name: 'reserve: an unknown round',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-noround',
    body: (w) => ({ ...(reserve('b-noround', 10)(w) as object), round_id: 'r-unknown' }),
    expect: errorB(404, 'ROUND_NOT_FOUND', 'no round r-unknown'),
  },
  {
    name: 'reserve: a Crash round',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-crash',
    body: (w) => ({ ...(reserve('b-crash', 10)(w) as object), round_id: w.crashRoundId }),
    expect: errorB(409, 'WRONG_GAME', 'round rnd_<uuid> is a crash round; Stock Race bets need a stock_race round'),
  },
  {
    name: 'reserve: a currency the operator withdrew',
    phase: 'open',
    route: 'reserve',
    operator: 'withdrawn',
    player: 'b-withdrawn',
    body: reserve('b-withdrawn', 10),
    expect: errorB(400, 'CURRENCY_NOT_ALLOWED', 'this operator is not enabled for EUR; allowed: USD'),
  },
  {
    name: 'reserve: no idempotency_key',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-nokey',
    body: (w) => {
      const { idempotency_key: _, ...rest } = reserve('b-nokey', 10)(w) as Record<string, unknown>;
      return rest;
    },
    expect: errorB(
      400,
      'IDEMPOTENCY_KEY_MISSING',
      'field "idempotency_key" is required: reserve is a monetary write',
      [],
      null,
    ),
  },
  // Payout caps and compliance on reserve.
  {
    name: 'reserve: potential payout capped per bet',
    phase: 'open',
    route: 'reserve',
    operator: 'betCapped',
    player: 'b-cap',
    body: reserve('b-cap', 100, ['NVDA']),
    expect: answered(
      200,
      {
        bet_id: '<uuid>',
        round_id: 'rnd_<uuid>',
        round_number: 1,
        session_id: 'ses_<uuid>',
        player_ref: 'b-cap',
        status: 'reserved',
        stake: 100,
        currency: 'EUR',
        selected_stocks: ['NVDA'],
        potential_payout: 20,
        placed_at: 0,
      },
      [stockBet(10_000, 2000, ['NVDA'])],
    ),
  },
  {
    name: 'reserve: a large stake is flagged',
    phase: 'open',
    route: 'reserve',
    operator: 'flagged',
    player: 'b-large',
    body: reserve('b-large', 100),
    expect: answered(
      200,
      {
        bet_id: '<uuid>',
        round_id: 'rnd_<uuid>',
        round_number: 1,
        session_id: 'ses_<uuid>',
        player_ref: 'b-large',
        status: 'reserved',
        stake: 100,
        currency: 'EUR',
        selected_stocks: ['NVDA', 'TSLA'],
        potential_payout: 380,
        placed_at: 0,
      },
      [stockBet(10_000, 38_000, ['NVDA', 'TSLA'], { flags: ['large_stake'] })],
    ),
  },
  {
    name: 'reserve: one under the large stake is not',
    phase: 'open',
    route: 'reserve',
    operator: 'flagged',
    player: 'b-small',
    body: reserve('b-small', 99.99),
    expect: answered(
      200,
      {
        bet_id: '<uuid>',
        round_id: 'rnd_<uuid>',
        round_number: 1,
        session_id: 'ses_<uuid>',
        player_ref: 'b-small',
        status: 'reserved',
        stake: 99.99,
        currency: 'EUR',
        selected_stocks: ['NVDA', 'TSLA'],
        potential_payout: 379.96,
        placed_at: 0,
      },
      [stockBet(9999, 37_996, ['NVDA', 'TSLA'])],
    ),
  },
  {
    name: 'reserve: first of two under the per-round cap',
    phase: 'open',
    route: 'reserve',
    operator: 'roundCapped',
    player: 'b-round-1',
    body: reserve('b-round-1', 10, ['NVDA']),
    expect: answered(
      200,
      {
        bet_id: '<uuid>',
        round_id: 'rnd_<uuid>',
        round_number: 1,
        session_id: 'ses_<uuid>',
        player_ref: 'b-round-1',
        status: 'reserved',
        stake: 10,
        currency: 'EUR',
        selected_stocks: ['NVDA'],
        potential_payout: 76,
        placed_at: 0,
      },
      [stockBet(1000, 7600, ['NVDA'])],
    ),
  },
  {
    name: 'reserve: second of two under the per-round cap',
    phase: 'open',
    route: 'reserve',
    operator: 'roundCapped',
    player: 'b-round-2',
    body: reserve('b-round-2', 20, ['NVDA']),
    expect: answered(
      200,
      {
        bet_id: '<uuid>',
        round_id: 'rnd_<uuid>',
        round_number: 1,
        session_id: 'ses_<uuid>',
        player_ref: 'b-round-2',
        status: 'reserved',
        stake: 20,
        currency: 'EUR',
        selected_stocks: ['NVDA'],
        potential_payout: 152,
        placed_at: 0,
      },
      [stockBet(2000, 15_200, ['NVDA'])],
    ),
  },
  {
    name: 'reserve: a bet that loses',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-loses',
    body: reserve('b-loses', 10, ['TSLA']),
    expect: answered(
      200,
      {
        bet_id: '<uuid>',
        round_id: 'rnd_<uuid>',
        round_number: 1,
        session_id: 'ses_<uuid>',
        player_ref: 'b-loses',
        status: 'reserved',
        stake: 10,
        currency: 'EUR',
        selected_stocks: ['TSLA'],
        potential_payout: 76,
        placed_at: 0,
      },
      [stockBet(1000, 7600, ['TSLA'])],
    ),
  },
  // Idempotency.
  {
    name: 'reserve: same key, same body: the stored answer again',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-replay',
    before: reserve('b-replay', 12.5),
    body: reserve('b-replay', 12.5),
    expect: answered(
      200,
      {
        bet_id: '<uuid>',
        round_id: 'rnd_<uuid>',
        round_number: 1,
        session_id: 'ses_<uuid>',
        player_ref: 'b-replay',
        status: 'reserved',
        stake: 12.5,
        currency: 'EUR',
        selected_stocks: ['NVDA', 'TSLA'],
        potential_payout: 47.5,
        placed_at: 0,
      },
      [stockBet(1250, 4750, ['NVDA', 'TSLA'])],
      'true',
    ),
  },
  {
    name: 'reserve: same key, another body',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-reuse',
    before: reserve('b-reuse', 12.5),
    body: reserve('b-reuse', 12.6),
    expect: errorB(
      409,
      'IDEMPOTENCY_KEY_REUSED',
      'idempotency key reused with different body',
      [stockBet(1250, 4750, ['NVDA', 'TSLA'])],
      200,
    ),
  },
  {
    name: 'reserve: 100 concurrent duplicates',
    phase: 'open',
    route: 'reserve',
    operator: 'plain',
    player: 'b-dupes',
    concurrent: 100,
    body: reserve('b-dupes', 7.77),
    expect: answered(
      200,
      {
        bet_id: '<uuid>',
        round_id: 'rnd_<uuid>',
        round_number: 1,
        session_id: 'ses_<uuid>',
        player_ref: 'b-dupes',
        status: 'reserved',
        stake: 7.77,
        currency: 'EUR',
        selected_stocks: ['NVDA', 'TSLA'],
        potential_payout: 29.52,
        placed_at: 0,
      },
      [stockBet(777, 2952, ['NVDA', 'TSLA'])],
      '99 of 100',
    ),
  },

  // The Crash round runs at 1.12x; the Stock Race window is closed.
  {
    name: 'place: the window has closed',
    phase: 'running',
    route: 'place-bet',
    operator: 'plain',
    player: 'a-closed',
    body: () => ({ external_user_id: 'a-closed', amount: 100 }),
    expect: errorA(
      409,
      'BETTING_CLOSED',
      'no Crash round is taking bets right now; retry when the next betting window opens',
    ),
  },
  {
    name: 'reserve: the window has closed',
    phase: 'running',
    route: 'reserve',
    operator: 'plain',
    player: 'b-closed',
    body: reserve('b-closed', 10),
    expect: errorB(409, 'BETTING_CLOSED', 'betting on round 1 is closed (running); reserve in the next round'),
  },
  {
    name: 'reserve: an expired session',
    phase: 'running',
    route: 'reserve',
    operator: 'plain',
    player: 'b-min',
    body: (w) => ({ ...(reserve('b-min', 10)(w) as object), idempotency_key: 'expired' }),
    expect: errorB(409, 'SESSION_EXPIRED', 'session ses_<uuid> expired at <t+4000>; launch a new one', [
      stockBet(100, 380, ['NVDA', 'TSLA']),
    ]),
  },
  {
    name: 'cashout: by hand at 1.12x',
    phase: 'running',
    route: 'cashout',
    operator: 'plain',
    player: 'a-hand',
    body: (w) => ({ bet_id: w.bets['place: a bet to cash out by hand'] }),
    expect: answered(200, { bet_id: '<uuid>', payout: 1118, multiplier: 1.12 }, [
      crashBet('cashed_out', 999, { payout: 1118, cashout_multiplier: 112, cashout_kind: 'manual' }),
    ]),
  },
  {
    name: 'cashout: a bet already cashed out',
    phase: 'running',
    route: 'cashout',
    operator: 'plain',
    player: 'a-hand',
    key: 'again',
    body: (w) => ({ bet_id: w.bets['place: a bet to cash out by hand'] }),
    expect: errorA(409, 'BET_NOT_ACTIVE', 'bet <uuid> cannot be cashed out: it was already cashed out at 1.12x', [
      crashBet('cashed_out', 999, { payout: 1118, cashout_multiplier: 112, cashout_kind: 'manual' }),
    ]),
  },
  {
    name: 'cashout: a bet the auto cash-out took',
    phase: 'running',
    route: 'cashout',
    operator: 'plain',
    player: 'a-auto',
    body: (w) => ({ bet_id: w.bets['place: auto cash-out at 1.05'] }),
    expect: errorA(409, 'BET_NOT_ACTIVE', 'bet <uuid> cannot be cashed out: it was already cashed out at 1.05x', [
      crashBet('cashed_out', 1000, { payout: 1050, cashout_multiplier: 105, cashout_kind: 'auto', auto_cashout: 105 }),
    ]),
  },
  {
    name: 'cashout: a bet the per-bet cap forced out',
    phase: 'running',
    route: 'cashout',
    operator: 'betCapped',
    player: 'a-forced',
    body: (w) => ({ bet_id: w.bets['place: under the per-bet cap until 1.07x'] }),
    expect: errorA(409, 'BET_NOT_ACTIVE', 'bet <uuid> cannot be cashed out: it was already cashed out at 1.07x', [
      crashBet('cashed_out', 4700, {
        payout: 5000,
        cashout_multiplier: 107,
        cashout_kind: 'forced',
        potential_payout: 5000,
      }),
    ]),
  },
  {
    name: 'cashout: a bet the per-round cap forced out',
    phase: 'running',
    route: 'cashout',
    operator: 'roundCapped',
    player: 'a-round-1',
    body: (w) => ({ bet_id: w.bets['place: first of two under the per-round cap'] }),
    expect: errorA(409, 'BET_NOT_ACTIVE', 'bet <uuid> cannot be cashed out: it was already cashed out at 1.1x', [
      crashBet('cashed_out', 1000, { payout: 1100, cashout_multiplier: 110, cashout_kind: 'forced' }),
    ]),
  },
  {
    name: 'cashout: same key, same body: the stored answer again',
    phase: 'running',
    route: 'cashout',
    operator: 'plain',
    player: 'a-hand',
    key: 'key-cashout: by hand at 1.12x',
    body: (w) => ({ bet_id: w.bets['place: a bet to cash out by hand'] }),
    expect: answered(
      200,
      { bet_id: '<uuid>', payout: 1118, multiplier: 1.12 },
      [crashBet('cashed_out', 999, { payout: 1118, cashout_multiplier: 112, cashout_kind: 'manual' })],
      'true',
    ),
  },
  {
    name: 'cashout: same key, another body',
    phase: 'running',
    route: 'cashout',
    operator: 'plain',
    player: 'a-hand',
    key: 'key-cashout: by hand at 1.12x',
    body: (w) => ({ bet_id: w.bets['place: a bet to cash out just before the crash'] }),
    expect: errorA(
      409,
      'IDEMPOTENCY_KEY_REUSED',
      'idempotency key reused with different body',
      [crashBet('cashed_out', 999, { payout: 1118, cashout_multiplier: 112, cashout_kind: 'manual' })],
      200,
    ),
  },
  {
    name: 'cashout: 100 concurrent duplicates',
    phase: 'running',
    route: 'cashout',
    operator: 'plain',
    player: 'a-dupes',
    concurrent: 100,
    body: (w) => ({ bet_id: w.bets['place: 100 concurrent duplicates'] }),
    expect: answered(
      200,
      { bet_id: '<uuid>', payout: 784, multiplier: 1.12 },
      [crashBet('cashed_out', 700, { payout: 784, cashout_multiplier: 112, cashout_kind: 'manual' })],
      '99 of 100',
    ),
  },

  // The engine is stopped: the clock alone moves the curve.
  {
    name: 'cashout: one millisecond before the crash',
    phase: 'before-crash',
    route: 'cashout',
    operator: 'plain',
    player: 'a-late',
    body: (w) => ({ bet_id: w.bets['place: a bet to cash out just before the crash'] }),
    expect: answered(200, { bet_id: '<uuid>', payout: 1248, multiplier: 1.25 }, [
      crashBet('cashed_out', 999, { payout: 1248, cashout_multiplier: 125, cashout_kind: 'manual' }),
    ]),
  },
  {
    name: 'cashout: at the crash instant',
    phase: 'crash-instant',
    route: 'cashout',
    operator: 'plain',
    player: 'a-instant',
    body: (w) => ({ bet_id: w.bets['place: a bet to cash out at the crash instant'] }),
    expect: errorA(409, 'BET_NOT_ACTIVE', 'round 1 crashed at 1.26x before this cash-out', [crashBet('active', 999)]),
  },
  {
    name: 'cashout: the engine went silent',
    phase: 'interrupted',
    route: 'cashout',
    operator: 'plain',
    player: 'a-left',
    body: (w) => ({ bet_id: w.bets['place: a bet left in the round'] }),
    expect: errorA(
      409,
      'ROUND_INTERRUPTED',
      'round 1 is interrupted: its engine has not been heard from for 60001 ms (limit 60000 ms); ' +
        'no cash-out is paid, and unless the engine resumes the round is voided and the stake refunded',
      [crashBet('active', 250)],
    ),
  },
  {
    name: 'cashout: a bet whose round was voided',
    phase: 'voided',
    route: 'cashout',
    operator: 'plain',
    player: 'a-left',
    key: 'after-void',
    body: (w) => ({ bet_id: w.bets['place: a bet left in the round'] }),
    expect: errorA(
      409,
      'BET_NOT_ACTIVE',
      'bet <uuid> cannot be cashed out: its round was voided and the stake returned',
      [crashBet('void', 250, { payout: 250 })],
    ),
  },
];

/** Every bet the engines settle by themselves, by (operator, player), once both rounds have ended. */
export const FINAL_ROWS: { players: Record<string, [OperatorRole, string]>; expect: Record<string, BetRowView[]> } = {
  players: {
    'auto cash-out at 1.05': ['plain', 'a-auto'],
    'forced out by the per-bet cap': ['betCapped', 'a-forced'],
    'a stake equal to the per-bet cap': ['betCapped', 'a-cap'],
    'first under the per-round cap': ['roundCapped', 'a-round-1'],
    'second under the per-round cap': ['roundCapped', 'a-round-2'],
    'cashed out at the crash instant (refused)': ['plain', 'a-instant'],
    'left in the voided round': ['plain', 'a-left'],
    'a Stock Race winner capped per bet': ['betCapped', 'b-cap'],
    'first Stock Race winner under the per-round cap': ['roundCapped', 'b-round-1'],
    'second Stock Race winner under the per-round cap': ['roundCapped', 'b-round-2'],
    'a Stock Race loser': ['plain', 'b-loses'],
    'a Stock Race winner': ['plain', 'b-min'],
  },
  expect: {
    'auto cash-out at 1.05': [
      crashBet('cashed_out', 1000, { payout: 1050, cashout_multiplier: 105, cashout_kind: 'auto', auto_cashout: 105 }),
    ],
    'forced out by the per-bet cap': [
      crashBet('cashed_out', 4700, {
        payout: 5000,
        cashout_multiplier: 107,
        cashout_kind: 'forced',
        potential_payout: 5000,
      }),
    ],
    'a stake equal to the per-bet cap': [
      crashBet('cashed_out', 5000, {
        payout: 5000,
        cashout_multiplier: 101,
        cashout_kind: 'forced',
        potential_payout: 5000,
      }),
    ],
    'first under the per-round cap': [
      crashBet('cashed_out', 1000, { payout: 1100, cashout_multiplier: 110, cashout_kind: 'forced' }),
    ],
    'second under the per-round cap': [
      crashBet('cashed_out', 1000, { payout: 1100, cashout_multiplier: 110, cashout_kind: 'forced' }),
    ],
    'cashed out at the crash instant (refused)': [crashBet('void', 999, { payout: 999 })],
    'left in the voided round': [crashBet('void', 250, { payout: 250 })],
    'a Stock Race winner capped per bet': [stockBet(10_000, 2000, ['NVDA'], { status: 'won', payout: 2000 })],
    'first Stock Race winner under the per-round cap': [
      stockBet(1000, 7600, ['NVDA'], { status: 'won', payout: 1000 }),
    ],
    'second Stock Race winner under the per-round cap': [
      stockBet(2000, 15_200, ['NVDA'], { status: 'won', payout: 2000 }),
    ],
    'a Stock Race loser': [stockBet(1000, 7600, ['TSLA'], { status: 'lost', payout: 0 })],
    'a Stock Race winner': [stockBet(100, 380, ['NVDA', 'TSLA'], { status: 'won', payout: 380 })],
  },
};
