import { Type, type Static } from 'typebox';
import { crashRoundFields, roundFields } from '../../webhooks/round-schema';

/** Surface A request and response schemas: validation, TypeScript types and OpenAPI from one place. */
export const AuthHeaders = Type.Object(
  {
    'x-api-key': Type.String({ description: 'the partner API key' }),
    'x-signature': Type.String({
      description: 'lowercase hex HMAC-SHA256 of METHOD\\nPATH\\nTIMESTAMP\\nBODY keyed with the API secret',
    }),
    'x-timestamp': Type.String({ description: 'milliseconds since epoch; within 5 minutes of the server clock' }),
  },
  { additionalProperties: true },
);

export const IdempotentHeaders = Type.Object(
  {
    ...AuthHeaders.properties,
    // Required like the spec says; a request without it still answers 400 IDEMPOTENCY_KEY_MISSING
    // (see MISSING_FIELD_CODES in ../surface/validation-wording.ts).
    'idempotency-key': Type.String({ description: '1 to 255 characters, unique per operation' }),
  },
  { additionalProperties: true },
);

export const PlaceBetBody = Type.Object(
  {
    external_user_id: Type.String({
      minLength: 1,
      maxLength: 120,
      description: 'must be a string of 1 to 120 characters',
    }),
    amount: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'must be an integer from 1 to 1000000' }),
    auto_cashout: Type.Optional(
      Type.Union([Type.Number({ minimum: 1.01, maximum: 1_000_000 }), Type.Null()], {
        description: 'must be null or a number from 1.01 to 1000000 with at most 2 decimals',
      }),
    ),
  },
  { additionalProperties: false, title: 'PlaceBetRequest' },
);
export type PlaceBetBody = Static<typeof PlaceBetBody>;

export const PlacedBet = Type.Object(
  {
    bet_id: Type.String({ format: 'uuid' }),
    external_user_id: Type.String(),
    round_number: Type.Integer(),
    amount: Type.Integer(),
    auto_cashout: Type.Union([Type.Number(), Type.Null()]),
    livemode: Type.Optional(
      Type.Boolean({ description: 'false: placed with a test key, in a sandbox round (test data)' }),
    ),
  },
  { title: 'PlacedBet' },
);

export const CashoutBody = Type.Object(
  { bet_id: Type.String({ format: 'uuid', description: 'must be the UUID of a bet this operator placed' }) },
  { additionalProperties: false, title: 'CashoutRequest' },
);
export type CashoutBody = Static<typeof CashoutBody>;

export const CashoutResult = Type.Object(
  {
    bet_id: Type.String({ format: 'uuid' }),
    payout: Type.Integer(),
    multiplier: Type.Number(),
  },
  { title: 'CashoutResult' },
);

export const ErrorA = Type.Object(
  {
    error: Type.String({ description: 'what went wrong, in words' }),
    code: Type.String({ description: 'stable error code from the catalogue' }),
    trace_id: Type.Optional(Type.String()),
  },
  { title: 'PartnerError' },
);

/** A 5xx always carries the trace id (the x-request-id of the answer) to quote when reporting it. */
export const FaultA = Type.Object(
  {
    error: Type.String({ description: 'what went wrong, in words (nothing about the fault itself)' }),
    code: Type.String({ description: 'INTERNAL, or SERVICE_UNAVAILABLE: retry after Retry-After' }),
    trace_id: Type.String({ description: 'the x-request-id of this answer: quote it to support' }),
  },
  { title: 'PartnerFault' },
);

export const RoundView = Type.Object(
  {
    ...roundFields,
    outcome: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description: 'closed: {crash_point}',
    }),
    ...crashRoundFields,
    multiplier: Type.Optional(Type.Number({ description: 'while running: the multiplier now' })),
  },
  { additionalProperties: true, title: 'CrashRound' },
);

export const CrashBetView = Type.Object(
  {
    livemode: Type.Boolean({ description: 'false for a bet of a test-mode operator (test data)' }),
    bet_id: Type.String(),
    external_user_id: Type.String(),
    round_id: Type.String(),
    round_number: Type.Integer(),
    amount: Type.Integer(),
    auto_cashout: Type.Union([Type.Number(), Type.Null()]),
    status: Type.String({ description: 'active | cashed_out | lost | void' }),
    payout: Type.Union([Type.Integer(), Type.Null()]),
    multiplier: Type.Union([Type.Number(), Type.Null()]),
    cashout_kind: Type.Union([Type.String(), Type.Null()]),
    placed_at: Type.Integer(),
    settled_at: Type.Union([Type.Integer(), Type.Null()]),
  },
  { title: 'CrashBet' },
);

// Path and query parameters arrive as text and the validator does not coerce (bodies must not be
// coerced), so numbers in paths are validated as digit strings and converted by the route.
export const RoundNumberParams = Type.Object({
  round_number: Type.String({
    pattern: '^[1-9][0-9]{0,14}$',
    description: 'must be a round number (a positive integer)',
  }),
});
export const BetIdParams = Type.Object({ bet_id: Type.String({ format: 'uuid', description: 'must be a bet UUID' }) });

/** A page size: 1 to 100, validated here as digits since query parameters arrive as text. */
const PAGE_LIMIT = Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'must be an integer from 1 to 100' });

export const CrashBetListQuery = Type.Object(
  {
    external_user_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 120,
        description: "must be a player's external_user_id (1 to 120 characters): that player's bets",
      }),
    ),
    round_number: Type.Optional(
      Type.String({
        pattern: '^[1-9][0-9]{0,14}$',
        description: 'must be a round number (a positive integer): the bets of that round',
      }),
    ),
    status: Type.Optional(
      Type.Union([Type.Literal('active'), Type.Literal('cashed_out'), Type.Literal('lost'), Type.Literal('void')], {
        description: 'must be one of active, cashed_out, lost, void',
      }),
    ),
    limit: Type.Optional(PAGE_LIMIT),
    starting_after: Type.Optional(
      Type.String({
        format: 'uuid',
        description: 'must be a bet_id: the last one of the previous page, after which this page goes on',
      }),
    ),
  },
  { additionalProperties: false },
);

export const CrashBetList = Type.Object(
  {
    data: Type.Array(CrashBetView, { description: 'newest first (placed_at descending, then bet_id)' }),
    has_more: Type.Boolean({
      description:
        'true: another page follows (pass the last bet_id of this page as starting_after); false: the list ends here',
    }),
  },
  { title: 'CrashBetList' },
);
