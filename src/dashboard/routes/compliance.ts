import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppServices } from '../../services';
import { ctx } from '../context';
import { field, queryField, type FormBody } from '../forms';
import { compliancePage, flagListHref, type FlagListFilters } from '../views/compliance';

/**
 * Flags a page shows. Older ones are reached page by page through the cursor (the last flag of a page),
 * so an operator with tens of thousands of flags gets pages of this size, never one enormous page.
 */
const FLAGS_PER_PAGE = 100;
/** The only outcome message this page shows after a redirect: it echoes nothing from the address. */
const ACKNOWLEDGED_NOTICE = 'Flag acknowledged.';

/** The same bounds whether the filters come from the address (the list) or from a form (acknowledge). */
function filtersFrom(values: Record<string, unknown>): FlagListFilters & { startingAfter?: string } {
  return {
    rule: queryField(values, 'rule', 40),
    player: queryField(values, 'player', 120),
    state: queryField(values, 'state', 20),
    startingAfter: queryField(values, 'starting_after', 100),
  };
}

/** This operator's compliance flags, newest first, page by page; each open flag can be acknowledged. */
export async function complianceRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  app.get('/compliance', async (req: FastifyRequest<{ Querystring: Record<string, unknown> }>, reply) => {
    const c = ctx(req);
    const { startingAfter, ...filters } = filtersFrom(req.query);
    // One flag more than the page shows tells whether there are older ones to link to.
    const found = await services.complianceFlags.list(c.operator.id, {
      ...filters,
      startingAfter,
      limit: FLAGS_PER_PAGE + 1,
    });
    const flags = found.slice(0, FLAGS_PER_PAGE);
    const notice = req.query.done === 'acknowledged' ? ACKNOWLEDGED_NOTICE : null;
    return reply.type('text/html; charset=utf-8').send(
      compliancePage({
        user: c.user,
        flags,
        filters,
        startingAfter,
        hasOlder: found.length > FLAGS_PER_PAGE,
        pageSize: FLAGS_PER_PAGE,
        notice,
      }),
    );
  });

  // A flag of another operator, like an unknown one, is 404 (the service scopes it); a second
  // acknowledgement keeps the first's time and person. Who: the signed-in user's email.
  app.post(
    '/compliance/:id/acknowledge',
    async (req: FastifyRequest<{ Params: { id: string }; Body: FormBody }>, reply) => {
      const c = ctx(req);
      // Back to the page the button was on: the form carries its filters and cursor (checked first, so
      // a refused form acknowledges nothing).
      const body = (req.body ?? {}) as FormBody;
      const values = Object.fromEntries(
        ['rule', 'player', 'state', 'starting_after'].map((name) => [name, field(body, name)]),
      );
      const { startingAfter, ...filters } = filtersFrom(values);
      const back = flagListHref(filters, startingAfter);
      await services.complianceFlags.acknowledge(
        c.operator.id,
        req.params.id,
        c.session.user.email,
        services.clock.now(),
      );
      return reply.redirect(`${back}${back.includes('?') ? '&' : '?'}done=acknowledged`, 303);
    },
  );
}
