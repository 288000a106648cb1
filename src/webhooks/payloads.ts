/**
 * The published shape of every webhook (payload version v1). One envelope for every event:
 * `{id, type, created_at, livemode, data}`; `data` depends on `type`. v1 changes only additively (new
 * fields, new event types); a breaking change would ship as a new type name, never in place.
 * These schemas are served at GET …/webhooks/schema and in the OpenAPI document (`webhooks`).
 */
import type { OpenAPIV3_1 } from 'openapi-types';
import { Type, type TSchema } from 'typebox';
import { crashRoundFields, roundFields, stockRaceRoundFields } from './round-schema';

export const WEBHOOK_PAYLOAD_VERSION = 'v1';

const Nullable = <T extends TSchema>(t: T, description?: string) => Type.Union([t, Type.Null()], description ? { description } : {});
const Ms = (description: string) => Type.Integer({ description: `${description} (milliseconds since epoch)` });

/**
 * round.opened / round.closed: the round as its read endpoint presents it at that moment (GET
 * /api/public/v1/rounds/{round_number} for Crash, GET /v1/rounds/{round_id} for Stock Race), built
 * by the same presenter from the same field schemas (src/webhooks/round-schema.ts). round.opened has
 * status open; round.closed has closed (with the outcome) or void.
 */
export const RoundEventData = Type.Object(
  {
    ...roundFields,
    outcome: Nullable(
      Type.Object({}, { additionalProperties: true }),
      'crash: {crash_point}. stock_race: {winner, pct, stocks: [{symbol, pct}]}. null unless closed',
    ),
    salt: Type.Optional(crashRoundFields.salt),
    house_edge_bp: Type.Optional(crashRoundFields.house_edge_bp),
    symbols: Type.Optional(stockRaceRoundFields.symbols),
    race_ms: Type.Optional(stockRaceRoundFields.race_ms),
  },
  { additionalProperties: true },
);

export const BetSettledData = Type.Object(
  {
    bet_id: Type.String(),
    game: Type.Union([Type.Literal('crash'), Type.Literal('stock_race')]),
    round_id: Type.String(),
    round_number: Type.Integer(),
    player: Type.String({ description: 'external_user_id (Surface A) or player_ref (Surface B)' }),
    currency: Nullable(Type.String(), 'ISO 4217 code for Stock Race; null for Crash, whose amounts are plain integers'),
    amount: Type.Number({ description: 'the stake: an integer on Surface A, a decimal in the currency on Surface B' }),
    status: Type.Union([Type.Literal('cashed_out'), Type.Literal('lost'), Type.Literal('won'), Type.Literal('void')]),
    payout: Type.Number({ description: '0 for a loss; the stake for a void' }),
    multiplier: Nullable(Type.Number(), 'Crash: the cash-out multiplier'),
    cashout_kind: Nullable(Type.Union([Type.Literal('manual'), Type.Literal('auto'), Type.Literal('forced')]), 'Crash cash-outs only'),
    selections: Nullable(Type.Array(Type.String()), 'Stock Race: the selected symbols'),
    winner: Type.Optional(Nullable(Type.String(), 'Stock Race only: the winning symbol; null for a void')),
    pct: Type.Optional(Nullable(Type.Number(), "Stock Race only: the winner's percentage move; null for a void")),
    settled_at: Ms('when the bet was settled'),
  },
  { additionalProperties: true },
);

export const COMPLIANCE_RULES = ['large_stake', 'large_payout', 'bet_velocity', 'machine_timing', 'session_multi_place'] as const;
export type ComplianceRule = (typeof COMPLIANCE_RULES)[number];

export const RuleSchema = Type.Union(
  [Type.Literal('large_stake'), Type.Literal('large_payout'), Type.Literal('bet_velocity'), Type.Literal('machine_timing'), Type.Literal('session_multi_place')],
  { description: `one of ${COMPLIANCE_RULES.join(', ')}` },
);

export const ComplianceFlagData = Type.Object(
  {
    flag_id: Type.String(),
    rule: RuleSchema,
    player: Nullable(Type.String()),
    bet_id: Nullable(Type.String()),
    session_id: Nullable(Type.String()),
    game: Nullable(Type.String()),
    round_id: Nullable(Type.String()),
    details: Type.Object({}, { additionalProperties: true, description: 'rule-specific measurements and the threshold that was crossed' }),
    created_at: Ms('when the flag was raised'),
  },
  { additionalProperties: true },
);

export const TestEventData = Type.Object(
  {
    endpoint_id: Type.String(),
    message: Type.String(),
  },
  { additionalProperties: true },
);

export const WEBHOOK_EVENT_DATA = {
  'round.opened': { summary: 'A round opened: its betting window started', data: RoundEventData },
  'round.closed': { summary: 'A round closed with its outcome, or was voided', data: RoundEventData },
  'bet.settled': { summary: 'A bet was settled: cashed out (manual, auto, forced), lost, won or voided', data: BetSettledData },
  'compliance.flag': { summary: 'A compliance rule raised a flag', data: ComplianceFlagData },
  'webhook.test': { summary: 'Sent on request to check an endpoint; never sent otherwise', data: TestEventData },
} as const;

export type WebhookTypeName = keyof typeof WEBHOOK_EVENT_DATA;

export function envelopeSchema(type: WebhookTypeName): TSchema {
  return Type.Object(
    {
      id: Type.String({ description: 'event id (evt_…); the same on every retry and on a re-send: deduplicate on it' }),
      type: Type.Literal(type),
      created_at: Ms('when the change that caused the event was committed'),
      livemode: Type.Boolean({ description: 'false for test data: events of a sandbox (test-mode) operator' }),
      data: WEBHOOK_EVENT_DATA[type].data,
    },
    { additionalProperties: false, description: WEBHOOK_EVENT_DATA[type].summary },
  );
}

/** A self-contained JSON Schema (2020-12) document for every event type. */
export function webhookSchemaDocument(): Record<string, unknown> {
  const types = Object.keys(WEBHOOK_EVENT_DATA) as WebhookTypeName[];
  const defs = Object.fromEntries(types.map((t) => [t, envelopeSchema(t)]));
  return JSON.parse(
    JSON.stringify({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: `urn:round-betting-service:webhooks:${WEBHOOK_PAYLOAD_VERSION}`,
      title: `Webhook payloads ${WEBHOOK_PAYLOAD_VERSION}`,
      version: WEBHOOK_PAYLOAD_VERSION,
      oneOf: types.map((t) => ({ $ref: `#/$defs/${t}` })),
      $defs: defs,
    }),
  ) as Record<string, unknown>;
}

const SIGNATURE_NOTE =
  'Surface A endpoints: x-service-signature (t=<ms>,v1=<hex HMAC-SHA256(endpoint secret, "<t>.<body>")>) and the Standard Webhooks ' +
  'headers webhook-id, webhook-timestamp, webhook-signature. Surface B endpoints: X-Operator-Key, X-Timestamp and X-Signature = hex ' +
  'HMAC-SHA256(operator secret, "POST\\n<path>\\n<timestamp>\\n<body>"), plus x-service-signature. Answer 2xx within the timeout.';

/** OpenAPI 3.1 `webhooks`: one POST per event type, so generators and readers see every payload. */
export function openApiWebhooks(): Record<string, OpenAPIV3_1.PathItemObject> {
  const out: Record<string, OpenAPIV3_1.PathItemObject> = {};
  for (const type of Object.keys(WEBHOOK_EVENT_DATA) as WebhookTypeName[]) {
    out[type] = {
      post: {
        summary: WEBHOOK_EVENT_DATA[type].summary,
        description: SIGNATURE_NOTE,
        tags: ['Webhooks'],
        requestBody: { required: true, content: { 'application/json': { schema: JSON.parse(JSON.stringify(envelopeSchema(type))) } } },
        responses: { '200': { description: 'any 2xx acknowledges the delivery; anything else (or no answer in time) is retried' } },
      },
    };
  }
  return out;
}
