import { Type, type Static } from 'typebox';
import { roundFields, stockRaceRoundFields } from '../../webhooks/round-schema';
import { HAS_MORE_DESCRIPTION } from '../webhooks/schemas';

/** Surface B request and response schemas: validation, TypeScript types and OpenAPI from one place. */
export const AuthHeadersB = Type.Object(
  {
    'x-operator-key': Type.String({ description: 'the operator API key' }),
    'x-signature': Type.String({
      description: 'lowercase hex HMAC-SHA256 of METHOD\\nPATH\\nTIMESTAMP\\nBODY keyed with the API secret',
    }),
    'x-timestamp': Type.String({ description: 'milliseconds since epoch; within 5 minutes of the server clock' }),
  },
  { additionalProperties: true },
);

/** A 4xx: the spec's `{error, message}`. Every 4xx has its message, so clients may rely on it. */
export const ErrorB = Type.Object(
  {
    error: Type.String({ description: 'stable error code from the catalogue (INVALID_SIGNATURE, BETTING_CLOSED, …)' }),
    message: Type.String({ description: 'what went wrong, in words' }),
  },
  { title: 'OperatorError' },
);

/** A 5xx: the spec's `{error, trace_id}`; a 503 (retry shortly) also says what to do in `message`. */
export const FaultB = Type.Object(
  {
    error: Type.String({ description: 'INTERNAL for a server fault; SERVICE_UNAVAILABLE: retry after Retry-After' }),
    message: Type.Optional(Type.String({ description: 'on 503 only: what to do (absent on 500)' })),
    trace_id: Type.String({ description: 'the x-request-id of this answer: quote it to support' }),
  },
  { title: 'OperatorFault' },
);

export const LaunchBody = Type.Object(
  {
    player_ref: Type.String({ minLength: 1, maxLength: 120, description: 'must be a string of 1 to 120 characters' }),
    currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'must be an uppercase ISO 4217 code such as EUR' }),
    return_url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'must be an absolute https URL of at most 2048 characters',
    }),
  },
  { additionalProperties: false, title: 'LaunchSessionRequest' },
);
export type LaunchBody = Static<typeof LaunchBody>;

export const LaunchResult = Type.Object(
  {
    session_id: Type.String(),
    launch_url: Type.String({ description: 'the player page, carrying the session token as `token`' }),
    expires_at: Type.Integer({ description: 'milliseconds since epoch' }),
  },
  { title: 'LaunchedSession' },
);

export const ReserveBody = Type.Object(
  {
    session_id: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'must be a session_id from /v1/sessions/launch',
    }),
    round_id: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'must be the round_id of the open Stock Race round',
    }),
    selected_stocks: Type.Array(Type.String({ minLength: 1, maxLength: 32 }), {
      maxItems: 64,
      description: 'must be an array of stock symbols (strings)',
    }),
    stake: Type.Number({ description: 'must be a decimal amount in the session currency' }),
    // Required like every field here; a missing key still answers 400 IDEMPOTENCY_KEY_MISSING (see
    // MISSING_FIELD_CODES in ../surface/validation-wording.ts), the code the service gives for any monetary
    // write without one.
    idempotency_key: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'must be 1 to 255 characters, unique per reservation',
    }),
  },
  { additionalProperties: false, title: 'ReserveRequest' },
);
export type ReserveBody = Static<typeof ReserveBody>;

export const ReservedBetView = Type.Object(
  {
    livemode: Type.Optional(
      Type.Boolean({ description: 'false: reserved with a test key, in a sandbox round (test data)' }),
    ),
    bet_id: Type.String({ format: 'uuid' }),
    round_id: Type.String(),
    round_number: Type.Integer(),
    session_id: Type.String(),
    player_ref: Type.String(),
    status: Type.String({ description: 'reserved' }),
    stake: Type.Number(),
    currency: Type.String(),
    selected_stocks: Type.Array(Type.String()),
    potential_payout: Type.Number({
      description: 'what the bet pays if one of its stocks wins (floored to the minor unit, capped)',
    }),
    placed_at: Type.Integer(),
  },
  { title: 'ReservedBet' },
);

export const StockRaceBetView = Type.Object(
  {
    livemode: Type.Boolean({ description: 'false for a bet of a test-mode operator (test data)' }),
    bet_id: Type.String(),
    round_id: Type.String(),
    round_number: Type.Integer(),
    session_id: Type.Union([Type.String(), Type.Null()]),
    player_ref: Type.String(),
    status: Type.String({ description: 'reserved | won | lost | void' }),
    stake: Type.Number(),
    currency: Type.String(),
    selected_stocks: Type.Array(Type.String()),
    payout: Type.Union([Type.Number(), Type.Null()], { description: 'null until settled' }),
    placed_at: Type.Integer(),
    settled_at: Type.Union([Type.Integer(), Type.Null()]),
    settlement: Type.Union(
      [
        Type.Object(
          {
            status: Type.String({ description: 'pending | delivered' }),
            attempts: Type.Integer(),
            next_attempt_at: Type.Union([Type.Integer(), Type.Null()]),
            delivered_at: Type.Union([Type.Integer(), Type.Null()]),
          },
          { title: 'SettleCallProgress' },
        ),
        Type.Null(),
      ],
      { description: "the settle call to the operator's wallet; null before settlement or without a wallet_url" },
    ),
  },
  { title: 'StockRaceBet' },
);

export const StockRaceRoundView = Type.Object(
  {
    ...roundFields,
    outcome: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description: 'closed: {winner, pct, stocks[{symbol, pct}]}',
    }),
    ...stockRaceRoundFields,
    progress_permille: Type.Optional(Type.Integer({ description: 'while running: how far the race is, 0..1000' })),
    stocks: Type.Optional(
      Type.Array(Type.Object({ symbol: Type.String(), pct: Type.Number() }), {
        description: 'while running: each stock now',
      }),
    ),
  },
  { additionalProperties: true, title: 'StockRaceRound' },
);

export const StockRaceBetListQuery = Type.Object(
  {
    player_ref: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 120,
        description: "must be a player's player_ref (1 to 120 characters): that player's bets",
      }),
    ),
    round_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'must be a round id: the bets of that round' }),
    ),
    status: Type.Optional(
      Type.Union([Type.Literal('reserved'), Type.Literal('won'), Type.Literal('lost'), Type.Literal('void')], {
        description: 'must be one of reserved, won, lost, void',
      }),
    ),
    limit: Type.Optional(
      Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'must be an integer from 1 to 100' }),
    ),
    starting_after: Type.Optional(
      Type.String({
        format: 'uuid',
        description: 'must be a bet_id: the last one of the previous page, after which this page goes on',
      }),
    ),
  },
  { additionalProperties: false },
);

export const StockRaceBetList = Type.Object(
  {
    data: Type.Array(StockRaceBetView, { description: 'newest first (placed_at descending, then bet_id)' }),
    has_more: Type.Boolean({
      description:
        'true: another page follows (pass the last bet_id of this page as starting_after); false: the list ends here',
    }),
  },
  { title: 'StockRaceBetList' },
);

export const SettlementView = Type.Object(
  {
    bet_id: Type.String(),
    operator_id: Type.String(),
    idempotency_key: Type.String(),
    status: Type.String({ description: 'pending | delivered' }),
    attempts: Type.Integer(),
    next_attempt_at: Type.Union([Type.Integer(), Type.Null()]),
    last_status_code: Type.Union([Type.Integer(), Type.Null()]),
    last_error: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.Integer(),
    delivered_at: Type.Union([Type.Integer(), Type.Null()]),
    body: Type.Object(
      {
        bet_id: Type.String(),
        winner: Type.Union([Type.String(), Type.Null()]),
        pct: Type.Union([Type.Number(), Type.Null()]),
        payout: Type.Number(),
        idempotency_key: Type.String(),
      },
      { description: 'the exact body POSTed to {wallet_url}/v1/bets/settle', title: 'WalletSettleRequest' },
    ),
  },
  { title: 'Settlement' },
);

export const SettlementList = Type.Object(
  {
    settlements: Type.Array(SettlementView, { description: 'oldest first (created_at, then bet_id)' }),
    has_more: Type.Boolean({ description: HAS_MORE_DESCRIPTION }),
  },
  { title: 'SettlementList' },
);

export const SettlementQuery = Type.Object(
  {
    status: Type.Optional(
      Type.Union([Type.Literal('pending'), Type.Literal('delivered')], { description: 'must be pending or delivered' }),
    ),
    starting_after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          'must be a bet_id: the last one of the previous page, after which this page goes on ' +
          "(the page cursor; a round's settlements share created_at)",
      }),
    ),
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$', description: 'must be an integer from 1 to 1000' })),
  },
  { additionalProperties: false },
);

export const RoundIdParams = Type.Object({
  round_id: Type.String({ minLength: 1, maxLength: 100, description: 'must be a round id' }),
});
export const BetIdParamsB = Type.Object({ bet_id: Type.String({ format: 'uuid', description: 'must be a bet UUID' }) });
