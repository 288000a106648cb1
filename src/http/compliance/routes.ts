import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DomainError } from '../../errors/codes';
import { absentBodyAsEmpty } from '../json-body';
import { withRetryAfter } from '../openapi';
import { guardSurface } from '../surface/guard-surface';
import type { Surface } from '../surface/surface';
import type { AppServices } from '../../services';
import { ComplianceFlagData, RuleSchema } from '../../webhooks/payloads';
import { authHeadersFor, ErrorBody, HAS_MORE_DESCRIPTION, SIGNED_ROUTE_ERRORS } from '../webhooks/schemas';

const FlagStateSchema = Type.Union([Type.Literal('open'), Type.Literal('acknowledged')], {
  description: 'open: not acknowledged yet (the work queue); acknowledged: dealt with. Both when absent',
});

const FlagQuery = Type.Object(
  {
    rule: Type.Optional(RuleSchema),
    state: Type.Optional(FlagStateSchema),
    player: Type.Optional(Type.String({ minLength: 1, maxLength: 120, description: 'external_user_id or player_ref' })),
    before: Type.Optional(
      Type.String({ pattern: '^\\d{1,15}$', description: 'must be milliseconds since epoch: flags raised before it' }),
    ),
    starting_after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          'must be a flag_id: the last one of the previous page, after which this page goes on ' +
          "(the page cursor; flags raised by one round's close share created_at, so `before` alone cannot page them)",
      }),
    ),
    limit: Type.Optional(Type.String({ pattern: '^\\d{1,4}$', description: 'must be an integer from 1 to 1000' })),
  },
  { additionalProperties: false },
);

/**
 * The flag as the API shows it: what the compliance.flag webhook carries, and its acknowledgement.
 * The webhook keeps its own schema (ComplianceFlagData): it reports the flag as raised, when both
 * fields are always null, and events stored before acknowledgements existed are re-sent as they were.
 */
const ComplianceFlagView = Type.Object(
  {
    ...ComplianceFlagData.properties,
    acknowledged_at: Type.Union([Type.Integer(), Type.Null()], {
      description: 'when the flag was acknowledged (milliseconds since epoch); null while it is open',
    }),
    acknowledged_by: Type.Union([Type.String(), Type.Null()], {
      description:
        "who acknowledged it: api:<by> (or api) through this API, a dashboard user's email, " +
        'or admin:<name> from the admin CLI; null while it is open',
    }),
  },
  {
    title: 'ComplianceFlag',
    additionalProperties: false,
    description: 'A compliance flag and its acknowledgement; the data of compliance.flag webhooks without the latter',
  },
);

const FlagList = Type.Object(
  {
    flags: Type.Array(ComplianceFlagView, { description: 'newest first (created_at descending, then flag_id)' }),
    has_more: Type.Boolean({ description: HAS_MORE_DESCRIPTION }),
  },
  { title: 'ComplianceFlagList' },
);

const FlagIdParams = Type.Object({
  flag_id: Type.String({ minLength: 1, maxLength: 100, description: 'must be a flag id (flag_…)' }),
});

/** Longest `by` an acknowledgement takes: a back-office user's name or email, not a note. */
const MAX_BY_LENGTH = 100;

const AcknowledgeBody = Type.Object(
  {
    by: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_BY_LENGTH,
        // At least one visible character, and no control characters (it is shown on the dashboard).
        pattern: '^[^\\u0000-\\u001f\\u007f]*[^\\s\\u0000-\\u001f\\u007f][^\\u0000-\\u001f\\u007f]*$',
        description:
          `must be 1 to ${MAX_BY_LENGTH} characters without control characters: who in your back office ` +
          'acknowledges the flag; recorded as acknowledged_by api:<by> (api when absent)',
      }),
    ),
  },
  { title: 'AcknowledgeFlagRequest', additionalProperties: false },
);

// 503: shared state (store, Redis) unreachable, or the instance shutting down: retry after Retry-After.
const errors = withRetryAfter({
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  429: ErrorBody,
  500: ErrorBody,
  503: ErrorBody,
});

// The acknowledge call also answers an unknown flag (404), a replayed signature (409) and its body's refusals.
const acknowledgeErrors = SIGNED_ROUTE_ERRORS;

/** What acknowledged_by records for an API call: the channel, then the back-office user when named. */
function apiAcknowledgedBy(by: string | undefined): string {
  const named = by?.trim();
  return named ? `api:${named}` : 'api';
}

/**
 * This operator's compliance flags, mounted on both surfaces: the list, and acknowledging one. The
 * acknowledge POST takes no Idempotency-Key (like PATCH and DELETE it sets a state, and a retry signed
 * afresh answers the same flag); like them, the same signed bytes sent again are 409 REQUEST_REPLAYED.
 */
export function complianceRoutes(surface: Surface) {
  return async function register(app: FastifyInstance, s: AppServices): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>();
    guardSurface(app, surface, s);

    r.get(
      '/compliance/flags',
      {
        schema: {
          summary: 'Compliance flags raised for your players, newest first',
          description:
            'The data of compliance.flag webhooks is the same object without acknowledged_at and acknowledged_by ' +
            '(a flag is raised open). A flag never refuses a bet. state=open lists the flags still to deal with. ' +
            'Newest first (created_at descending, then flag_id). `limit`: default 100, maximum 1000. While ' +
            '`has_more` is true, pass the last `flag_id` of the page as `starting_after`; an id that is not one ' +
            'of your flags is 400 VALIDATION_FAILED.',
          tags: ['Compliance'],
          headers: authHeadersFor(surface),
          querystring: FlagQuery,
          response: { 200: FlagList, ...errors },
        },
      },
      async (req) => {
        const q = req.query;
        const limit = q.limit === undefined ? 100 : Number(q.limit);
        if (limit < 1 || limit > 1000)
          throw new DomainError('VALIDATION_FAILED', 'querystring field "limit" must be an integer from 1 to 1000');
        const page = await s.complianceFlags.page(req.operator!.id, {
          rule: q.rule,
          player: q.player,
          state: q.state,
          before: q.before === undefined ? undefined : Number(q.before),
          startingAfter: q.starting_after,
          limit,
        });
        return { flags: page.flags.map(({ operator_id: _o, ...f }) => f), has_more: page.hasMore };
      },
    );

    r.post(
      '/compliance/flags/:flag_id/acknowledge',
      {
        preValidation: absentBodyAsEmpty,
        schema: {
          summary: 'Acknowledge a compliance flag: mark it dealt with, recording when and by whom',
          description:
            'Answers the flag as the list shows it. Acknowledging an acknowledged flag changes nothing and ' +
            'answers the same flag: the first acknowledgement, its time and author, are kept. ' +
            "Another operator's flag, like an unknown id, is 404. No Idempotency-Key: retrying is harmless, " +
            'but sign each attempt afresh (the same signed bytes again are 409 REQUEST_REPLAYED).',
          tags: ['Compliance'],
          headers: authHeadersFor(surface),
          params: FlagIdParams,
          body: Type.Optional(AcknowledgeBody),
          response: { 200: ComplianceFlagView, ...acknowledgeErrors },
        },
      },
      async (req) => {
        const by = apiAcknowledgedBy(req.body?.by);
        const { operator_id: _o, ...flag } = await s.complianceFlags.acknowledge(
          req.operator!.id,
          req.params.flag_id,
          by,
          s.clock.now(),
        );
        return flag;
      },
    );
  };
}
