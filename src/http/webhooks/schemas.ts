import { Type, type Static } from 'typebox';
import { withRetryAfter } from '../openapi';
import type { Surface } from '../surface/surface';
import { EVENT_TYPES } from '../../webhooks/domain-event';
import { DELIVERY_STATUSES } from '../../webhooks/deliveries';
import { MAX_URL_LENGTH } from '../../outbound/url-safety';

/** Request and response schemas of the webhook management API (both surfaces). */

export function authHeadersFor(surface: Surface) {
  const h = surface.headers;
  return Type.Object(
    {
      [h.apiKey]: Type.String({ description: 'the operator API key' }),
      [h.signature]: Type.String({
        description: 'lowercase hex HMAC-SHA256 of METHOD\\nPATH\\nTIMESTAMP\\nBODY keyed with the API secret',
      }),
      [h.timestamp]: Type.String({ description: 'milliseconds since epoch; within 5 minutes of the server clock' }),
    },
    { additionalProperties: true },
  );
}

/** The headers of a POST that takes an Idempotency-Key when the caller sends one (http/keyed-write.ts). */
export function keyedHeadersFor(surface: Surface) {
  return Type.Object(
    {
      ...authHeadersFor(surface).properties,
      'idempotency-key': Type.Optional(
        Type.String({
          description:
            '1 to 255 characters: a retry under the same key (signed afresh) gets the first answer and changes nothing',
        }),
      ),
    },
    { additionalProperties: true },
  );
}

/** Both surfaces' error bodies fit this: A `{error: text, code}`, B `{error: CODE, message}`; 5xx adds trace_id. */
export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    code: Type.Optional(Type.String()),
    message: Type.Optional(Type.String()),
    trace_id: Type.Optional(Type.String()),
  },
  { title: 'ApiError' },
);

/**
 * The errors a signed route of these surface families answers: its own (400, 404, 409), authentication (401,
 * 403), a body over the limit or not JSON (413, 415, before the route runs), rate limits (429), and shared state
 * (store, Redis) unreachable or the instance shutting down (503, retry after Retry-After).
 */
export const SIGNED_ROUTE_ERRORS = withRetryAfter({
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
  413: ErrorBody,
  415: ErrorBody,
  429: ErrorBody,
  500: ErrorBody,
  503: ErrorBody,
});

const EventKind = Type.Union(
  [
    Type.Literal('round.opened'),
    Type.Literal('round.closed'),
    Type.Literal('bet.settled'),
    Type.Literal('compliance.flag'),
  ],
  { title: 'WebhookEventType', description: `one of ${EVENT_TYPES.join(', ')}` },
);
const Events = Type.Array(EventKind, {
  minItems: 1,
  maxItems: EVENT_TYPES.length * 2,
  description: `must be a non-empty array of: ${EVENT_TYPES.join(', ')}`,
});
const Url = Type.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  description: 'must be an https URL that resolves to a public address (at most 2048 characters)',
});

export const EndpointCreateBody = Type.Object(
  {
    url: Url,
    events: Type.Optional(Events),
    surface: Type.Optional(
      Type.Union([Type.Literal('A'), Type.Literal('B')], {
        description: 'A or B: the signing scheme of the deliveries; defaults to the surface the request was made on',
      }),
    ),
    enabled: Type.Optional(Type.Boolean({ description: 'must be true or false' })),
  },
  { title: 'CreateWebhookEndpointRequest', additionalProperties: false },
);
export type EndpointCreateBody = Static<typeof EndpointCreateBody>;

export const EndpointPatchBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    enabled: Type.Optional(Type.Boolean({ description: 'must be true or false' })),
  },
  { title: 'UpdateWebhookEndpointRequest', additionalProperties: false, minProperties: 1 },
);
export type EndpointPatchBody = Static<typeof EndpointPatchBody>;

/**
 * The body of a POST that takes no arguments (a test delivery, a re-send): none at all, or `{}`.
 * A stray field is refused rather than ignored, so a caller who meant an option learns it does not exist.
 */
export const NoArgumentsBody = Type.Object({}, { title: 'NoArguments', additionalProperties: false });

export const RotateBody = Type.Object(
  {
    overlap_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 30 * 86_400_000,
        description: 'must be an integer of milliseconds from 0 to 30 days',
      }),
    ),
  },
  { title: 'RotateWebhookSecretRequest', additionalProperties: false },
);

export const EndpointView = Type.Object(
  {
    endpoint_id: Type.String(),
    operator_id: Type.String(),
    url: Type.String(),
    surface: Type.Union([Type.Literal('A'), Type.Literal('B')]),
    events: Type.Array(Type.String()),
    enabled: Type.Boolean(),
    created_at: Type.Integer(),
    updated_at: Type.Integer(),
    previous_secret_expires_at: Type.Union([Type.Integer(), Type.Null()], {
      description: 'until then the previous secret still signs too',
    }),
  },
  { title: 'WebhookEndpoint' },
);

export const EndpointWithSecret = Type.Object(
  {
    ...EndpointView.properties,
    secret: Type.String({ description: 'whsec_…: shown only in this answer; store it now' }),
  },
  { title: 'WebhookEndpointWithSecret' },
);

/** What `has_more` says on every list of the API: exact, one row past the page is read to know it. */
export const HAS_MORE_DESCRIPTION =
  'true: another page follows (pass the last id of this page as starting_after); false: the list ends here';

export const EndpointList = Type.Object(
  {
    endpoints: Type.Array(EndpointView, { description: 'oldest first (created_at, then endpoint_id)' }),
    has_more: Type.Boolean({ description: HAS_MORE_DESCRIPTION }),
  },
  { title: 'WebhookEndpointList' },
);

export const EndpointQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'must be an integer from 1 to 100' }),
    ),
    starting_after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'must be an endpoint_id: the last one of the previous page, after which this page goes on',
      }),
    ),
  },
  { additionalProperties: false },
);

export const EndpointIdParams = Type.Object({
  endpoint_id: Type.String({ minLength: 1, maxLength: 100, description: 'must be an endpoint id (we_…)' }),
});
export const DeliveryIdParams = Type.Object({
  delivery_id: Type.String({ minLength: 1, maxLength: 100, description: 'must be a delivery id (dlv_…)' }),
});

export const DeliveryQuery = Type.Object(
  {
    status: Type.Optional(
      Type.Union(
        [Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('dead'), Type.Literal('cancelled')],
        {
          description: `one of ${DELIVERY_STATUSES.join(', ')}`,
        },
      ),
    ),
    endpoint_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    before: Type.Optional(
      Type.String({
        pattern: '^\\d{1,15}$',
        description: 'must be milliseconds since epoch: deliveries created before it',
      }),
    ),
    starting_after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          'must be a delivery_id: the last one of the previous page, after which this page goes on ' +
          '(the page cursor; deliveries of one round share created_at, so `before` alone cannot page them)',
      }),
    ),
    limit: Type.Optional(
      Type.String({
        pattern: '^(?:[1-9]|[1-9][0-9]|[1-4][0-9]{2}|500)$',
        description: 'must be an integer from 1 to 500',
      }),
    ),
  },
  { additionalProperties: false },
);

const Nullable = <T extends ReturnType<typeof Type.Integer> | ReturnType<typeof Type.String>>(t: T) =>
  Type.Union([t, Type.Null()]);

export const DeliveryView = Type.Object(
  {
    delivery_id: Type.String(),
    event_id: Type.String(),
    event_type: Type.String(),
    endpoint_id: Type.String(),
    status: Type.String({ description: DELIVERY_STATUSES.join(' | ') }),
    attempts: Type.Integer({ description: 'attempts made so far' }),
    next_attempt_at: Nullable(Type.Integer()),
    last_status_code: Nullable(Type.Integer()),
    last_error: Nullable(Type.String()),
    created_at: Type.Integer(),
    delivered_at: Nullable(Type.Integer()),
    dead_at: Nullable(
      Type.Integer({
        description:
          'when the delivery stopped for good without a 2xx: its attempts ran out (dead) or it was cancelled',
      }),
    ),
    resend_of: Nullable(Type.String({ description: 'the delivery this one re-sends' })),
  },
  { title: 'WebhookDelivery' },
);

export const AttemptView = Type.Object(
  {
    attempt: Type.Integer(),
    started_at: Type.Integer(),
    latency_ms: Type.Integer(),
    status_code: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    response_excerpt: Nullable(Type.String({ description: 'the first 500 characters of the answer' })),
  },
  { title: 'WebhookDeliveryAttempt' },
);

export const DeliveryDetail = Type.Object(
  { ...DeliveryView.properties, attempt_log: Type.Array(AttemptView) },
  { title: 'WebhookDeliveryDetail' },
);
export const DeliveryList = Type.Object(
  {
    deliveries: Type.Array(DeliveryView, { description: 'newest first (created_at descending, then delivery_id)' }),
    has_more: Type.Boolean({ description: HAS_MORE_DESCRIPTION }),
  },
  { title: 'WebhookDeliveryList' },
);

export const VerifyBody = Type.Object(
  {
    endpoint_secret: Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'must be the endpoint secret (whsec_…)',
    }),
    body: Type.String({ maxLength: 1_000_000, description: 'must be the raw body exactly as delivered, as a string' }),
    signature: Type.String({
      minLength: 1,
      maxLength: 4000,
      description: 'must be the x-service-signature header value',
    }),
  },
  { title: 'VerifySignatureRequest', additionalProperties: false },
);
export type VerifyBody = Static<typeof VerifyBody>;

export const VerifyResult = Type.Object(
  {
    valid: Type.Boolean(),
    reason: Type.Optional(
      Type.Union(
        [
          Type.Literal('MALFORMED_HEADER'),
          Type.Literal('SIGNATURE_MISMATCH'),
          Type.Literal('TIMESTAMP_OUTSIDE_TOLERANCE'),
        ],
        {
          description:
            'why not: the header is not t=<ms>,v1=<hex>; no v1 matches this secret and body; ' +
            'or the signature matches but t is too old or in the future',
        },
      ),
    ),
    message: Type.String(),
    timestamp: Type.Optional(Type.Integer({ description: 'the t= of the header, when it could be read' })),
  },
  { title: 'VerifySignatureResult' },
);
