/**
 * The published shape of every webhook (payload version v1): one TypeBox schema per event type is the
 * single source for the TypeScript types the event builders must satisfy, the check every event
 * passes before it enters the outbox (./event-check.ts), the OpenAPI `webhooks` section, the JSON
 * Schema document at GET …/webhooks/schema and the payload tables of docs/webhooks.md.
 *
 * One envelope for every event: `{id, type, created_at, livemode, data}`; `data` depends on `type`.
 * v1 changes only additively (new fields, new event types); a breaking change would ship as a new
 * type name, never in place.
 */
import type { OpenAPIV3, OpenAPIV3_1 } from 'openapi-types';
import { type Static, type TObject, type TSchema, Type } from 'typebox';
import { crashRoundFields, roundFields, stockRaceRoundFields } from './round-schema';

export const WEBHOOK_PAYLOAD_VERSION = 'v1';

const Nullable = <T extends TSchema>(t: T, description?: string) =>
  Type.Union([t, Type.Null()], description ? { description } : {});
const Ms = (description: string) => Type.Integer({ description: `${description} (milliseconds since epoch)` });

/*
 * The schemas below are exact: no field may be missing, mistyped or unknown, so the outbox check
 * catches a payload that drifted from the contract. What is published (openApiWebhooks,
 * webhookSchemaDocument) opens every object of `data` to further fields, the promise of v1's additive
 * changes: a receiver validating against the document keeps working when a field is added.
 */
const exact = { additionalProperties: false } as const;

export const CrashOutcomeData = Type.Object(
  { crash_point: Type.Number({ description: 'the multiplier the round crashed at, e.g. 2.37' }) },
  { title: 'CrashOutcome', ...exact, description: 'Crash outcome' },
);

export const StockRaceOutcomeData = Type.Object(
  {
    winner: Type.String({ description: 'the winning symbol' }),
    pct: Type.Number({ description: "the winner's percentage move" }),
    stocks: Type.Array(Type.Object({ symbol: Type.String(), pct: Type.Number() }, exact), {
      description: "every stock's percentage move",
    }),
  },
  { title: 'StockRaceOutcome', ...exact, description: 'Stock Race outcome' },
);

/**
 * round.opened / round.closed: the round as its read endpoint presents it at that moment (GET
 * /api/public/v1/rounds/{round_number} for Crash, GET /v1/rounds/{round_id} for Stock Race), built
 * by the same presenter from the same field schemas (src/webhooks/round-schema.ts). round.opened has
 * status open; round.closed has closed (with the outcome) or void. No round event is sent while a
 * round runs, so the live-only fields of a running round (Crash `multiplier`, Stock Race
 * `progress_permille` and `stocks`) never appear.
 */
export const RoundEventData = Type.Object(
  {
    ...roundFields,
    outcome: Nullable(
      Type.Union([CrashOutcomeData, StockRaceOutcomeData]),
      'crash: {crash_point}. stock_race: {winner, pct, stocks: [{symbol, pct}]}. null unless closed',
    ),
    salt: Type.Optional(crashRoundFields.salt),
    house_edge_bp: Type.Optional(crashRoundFields.house_edge_bp),
    symbols: Type.Optional(stockRaceRoundFields.symbols),
    race_ms: Type.Optional(stockRaceRoundFields.race_ms),
  },
  {
    title: 'RoundEventData',
    ...exact,
    description:
      'The round as its read endpoint shows it at that moment (GET /api/public/v1/rounds/{round_number} for Crash, ' +
      'GET /v1/rounds/{round_id} for Stock Race; one presenter builds both). round.opened carries status open; ' +
      'round.closed carries closed (with the outcome) or void (void_reason set, every stake returned). ' +
      'No round event is sent while a round runs, so the live-only fields of a running round ' +
      '(Crash multiplier, Stock Race progress_permille and stocks) never appear.',
  },
);

export const BetSettledData = Type.Object(
  {
    bet_id: Type.String({ description: 'the bet id' }),
    game: Type.Union([Type.Literal('crash'), Type.Literal('stock_race')], { description: 'the game' }),
    round_id: Type.String({ description: 'the round the bet was placed on' }),
    round_number: Type.Integer({ description: "the round's number in its game" }),
    player: Type.String({ description: 'external_user_id (Surface A) or player_ref (Surface B)' }),
    currency: Nullable(Type.String(), 'ISO 4217 code for Stock Race; null for Crash, whose amounts are plain integers'),
    amount: Type.Number({ description: 'the stake: an integer on Surface A, a decimal in the currency on Surface B' }),
    status: Type.Union([Type.Literal('cashed_out'), Type.Literal('lost'), Type.Literal('won'), Type.Literal('void')], {
      description: 'Crash: cashed_out, lost or void. Stock Race: won, lost or void',
    }),
    payout: Type.Number({ description: '0 for a loss; the stake for a void' }),
    multiplier: Nullable(Type.Number(), 'Crash: the cash-out multiplier'),
    cashout_kind: Nullable(
      Type.Union([Type.Literal('manual'), Type.Literal('auto'), Type.Literal('forced')]),
      'Crash cash-outs only',
    ),
    selections: Nullable(Type.Array(Type.String()), 'Stock Race: the selected symbols'),
    winner: Type.Optional(Nullable(Type.String(), 'Stock Race only: the winning symbol; null for a void')),
    pct: Type.Optional(Nullable(Type.Number(), "Stock Race only: the winner's percentage move; null for a void")),
    settled_at: Ms('when the bet was settled'),
  },
  {
    title: 'BetSettledData',
    ...exact,
    description:
      'Sent once per bet, when it reaches a final state: a Crash manual, auto or forced cash-out (per-bet or ' +
      "per-round cap) or a loss at the crash; a Stock Race win or loss; either game's void (payout = stake). " +
      "Crash amounts are integers; Stock Race amounts are decimals in the bet's currency.",
  },
);

export const COMPLIANCE_RULES = [
  'large_stake',
  'large_payout',
  'bet_velocity',
  'machine_timing',
  'session_multi_place',
] as const;
export type ComplianceRule = (typeof COMPLIANCE_RULES)[number];

export const RuleSchema = Type.Union(
  [
    Type.Literal('large_stake'),
    Type.Literal('large_payout'),
    Type.Literal('bet_velocity'),
    Type.Literal('machine_timing'),
    Type.Literal('session_multi_place'),
  ],
  { title: 'ComplianceRule', description: `one of ${COMPLIANCE_RULES.join(', ')}` },
);

export const ComplianceFlagData = Type.Object(
  {
    flag_id: Type.String({ description: 'the flag id (flag_…)' }),
    rule: RuleSchema,
    player: Nullable(Type.String(), 'the player the flag is about'),
    bet_id: Nullable(Type.String(), 'the bet that raised the flag, if one did'),
    session_id: Nullable(Type.String(), 'the Surface B play session, if the rule looked at one'),
    game: Nullable(Type.String(), 'crash or stock_race, when a bet raised the flag'),
    round_id: Nullable(Type.String(), "the bet's round, when a bet raised the flag"),
    details: Type.Record(Type.String(), Type.Unknown(), {
      description: 'rule-specific measurements and the threshold that was crossed',
    }),
    created_at: Ms('when the flag was raised'),
  },
  {
    title: 'ComplianceFlagData',
    ...exact,
    description:
      'The flag as raised; GET …/compliance/flags lists it with its acknowledgement added ' +
      '(acknowledged_at, acknowledged_by). The rules are in docs/webhooks.md, Compliance flags.',
  },
);

export const TestEventData = Type.Object(
  {
    endpoint_id: Type.String({ description: 'the endpoint the test was requested for' }),
    message: Type.String({ description: 'a fixed text' }),
  },
  { ...exact, title: 'WebhookTestData' },
);

/** The envelope every delivery body is: the same five fields around each type's `data`. */
function envelope<const K extends string, D extends TSchema>(type: K, name: string, data: D, summary: string) {
  return Type.Object(
    {
      id: Type.String({ description: 'event id (evt_…); the same on every retry and on a re-send: deduplicate on it' }),
      type: Type.Literal(type),
      created_at: Ms('when the change that caused the event was committed'),
      livemode: Type.Boolean({ description: 'false for test data: events of a sandbox (test-mode) operator' }),
      data,
    },
    { additionalProperties: false, title: name, description: summary },
  );
}

export const RoundOpenedWebhook = envelope(
  'round.opened',
  'RoundOpenedEvent',
  RoundEventData,
  'A round opened: its betting window started',
);
export const RoundClosedWebhook = envelope(
  'round.closed',
  'RoundClosedEvent',
  RoundEventData,
  'A round closed with its outcome, or was voided',
);
export const BetSettledWebhook = envelope(
  'bet.settled',
  'BetSettledEvent',
  BetSettledData,
  'A bet was settled: cashed out (manual, auto, forced), lost, won or voided',
);
export const ComplianceFlagWebhook = envelope(
  'compliance.flag',
  'ComplianceFlagEvent',
  ComplianceFlagData,
  'A compliance rule raised a flag',
);
export const WebhookTestWebhook = envelope(
  'webhook.test',
  'WebhookTestEvent',
  TestEventData,
  'Sent on request to check an endpoint; never sent otherwise',
);

/** Every event type and its schema, in the order the documents list them. */
export const WEBHOOK_EVENTS = {
  'round.opened': RoundOpenedWebhook,
  'round.closed': RoundClosedWebhook,
  'bet.settled': BetSettledWebhook,
  'compliance.flag': ComplianceFlagWebhook,
  'webhook.test': WebhookTestWebhook,
} as const;

export type WebhookTypeName = keyof typeof WEBHOOK_EVENTS;
export const WEBHOOK_TYPE_NAMES = Object.keys(WEBHOOK_EVENTS) as WebhookTypeName[];

/** Any delivery body: a union discriminated by `type`. */
export const WebhookEventSchema = Type.Union([
  RoundOpenedWebhook,
  RoundClosedWebhook,
  BetSettledWebhook,
  ComplianceFlagWebhook,
  WebhookTestWebhook,
]);
export type WebhookEvent = Static<typeof WebhookEventSchema>;
export type WebhookEventOf<K extends WebhookTypeName> = Extract<WebhookEvent, { type: K }>;
export type WebhookEventData<K extends WebhookTypeName> = WebhookEventOf<K>['data'];

export type RoundEventData = Static<typeof RoundEventData>;
export type BetSettledData = Static<typeof BetSettledData>;
export type ComplianceFlagData = Static<typeof ComplianceFlagData>;
export type TestEventData = Static<typeof TestEventData>;

/** A plain JSON copy of a schema (TypeBox schemas carry symbols that documents must not). */
const plain = <T>(schema: TSchema): T => JSON.parse(JSON.stringify(schema)) as T;

type JsonSchemaNode = Record<string, unknown>;

/** Every object in the schema accepts further fields (see the note on `exact` above). */
function openToAdditions(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(openToAdditions);
  if (node === null || typeof node !== 'object') return node;
  const out: JsonSchemaNode = {};
  for (const [key, value] of Object.entries(node)) out[key] = openToAdditions(value);
  if (out.type === 'object' && out.properties !== undefined) out.additionalProperties = true;
  return out;
}

/** The published schema of one event type: the exact envelope, its `data` open to additions. */
export function publishedEnvelopeSchema(type: WebhookTypeName): JsonSchemaNode {
  const schema = plain<JsonSchemaNode & { properties: JsonSchemaNode }>(WEBHOOK_EVENTS[type] as TObject);
  return { ...schema, properties: { ...schema.properties, data: openToAdditions(schema.properties.data) } };
}

/** A self-contained JSON Schema (2020-12) document for every event type. */
export function webhookSchemaDocument(): Record<string, unknown> {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: `urn:round-betting-service:webhooks:${WEBHOOK_PAYLOAD_VERSION}`,
    title: `Webhook payloads ${WEBHOOK_PAYLOAD_VERSION}`,
    version: WEBHOOK_PAYLOAD_VERSION,
    oneOf: WEBHOOK_TYPE_NAMES.map((t) => ({ $ref: `#/$defs/${t}` })),
    $defs: Object.fromEntries(WEBHOOK_TYPE_NAMES.map((t) => [t, publishedEnvelopeSchema(t)])),
  };
}

const SIGNATURE_NOTE =
  'Surface A endpoints: x-service-signature (t=<ms>,v1=<hex HMAC-SHA256(endpoint secret, "<t>.<body>")>) ' +
  'and the Standard Webhooks headers webhook-id, webhook-timestamp, webhook-signature. ' +
  'Surface B endpoints: X-Operator-Key, X-Timestamp and ' +
  'X-Signature = hex HMAC-SHA256(operator secret, "POST\\n<path>\\n<timestamp>\\n<body>"), ' +
  'plus x-service-signature. Answer 2xx within the timeout.';

/** OpenAPI 3.1 `webhooks`: one POST per event type, so generators and readers see every payload. */
export function openApiWebhooks(): Record<string, OpenAPIV3_1.PathItemObject> {
  const out: Record<string, OpenAPIV3_1.PathItemObject> = {};
  for (const type of WEBHOOK_TYPE_NAMES) {
    const schema = publishedEnvelopeSchema(type);
    // openapi-types types a 3.1 operation's body as both a 3.0 and a 3.1 object; a JSON Schema is both.
    const requestBody = {
      required: true,
      content: { 'application/json': { schema } },
    } as OpenAPIV3.RequestBodyObject & OpenAPIV3_1.RequestBodyObject;
    out[type] = {
      post: {
        summary: String(schema.description),
        description: SIGNATURE_NOTE,
        tags: ['Webhooks'],
        requestBody,
        responses: {
          '200': { description: 'any 2xx acknowledges the delivery; anything else (or no answer in time) is retried' },
        },
      },
    };
  }
  return out;
}
