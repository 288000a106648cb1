import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DomainError } from '../../errors/codes';
import { withRetryAfter } from '../openapi';
import { guardSurface, type Surface } from '../surface';
import type { AppServices } from '../../services';
import { ComplianceFlagData, RuleSchema } from '../../webhooks/payloads';
import { authHeadersFor, ErrorBody } from '../webhooks/schemas';

const FlagQuery = Type.Object(
  {
    rule: Type.Optional(RuleSchema),
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

const FlagList = Type.Object({ flags: Type.Array(ComplianceFlagData) });

// 503: shared state (store, Redis) unreachable, or the instance shutting down: retry after Retry-After.
const errors = withRetryAfter({
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  429: ErrorBody,
  500: ErrorBody,
  503: ErrorBody,
});

/** Read access to this operator's compliance flags, mounted on both surfaces. */
export function complianceRoutes(surface: Surface) {
  return async function register(app: FastifyInstance, s: AppServices): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>();
    guardSurface(app, surface, s);

    r.get(
      '/compliance/flags',
      {
        schema: {
          summary: 'Compliance flags raised for your players, newest first',
          description: 'The same objects are sent as the data of compliance.flag webhooks. A flag never refuses a bet.',
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
        const flags = await s.complianceFlags.list(req.operator!.id, {
          rule: q.rule,
          player: q.player,
          before: q.before === undefined ? undefined : Number(q.before),
          startingAfter: q.starting_after,
          limit,
        });
        return { flags: flags.map(({ operator_id: _o, ...f }) => f) };
      },
    );
  };
}
