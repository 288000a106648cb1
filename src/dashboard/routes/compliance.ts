import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppServices } from '../../services';
import { ctx } from '../context';
import { queryField } from '../forms';
import { compliancePage } from '../views/compliance';

/** Raised compliance flags of this operator, filtered by rule and player. */
export async function complianceRoutes(app: FastifyInstance, s: AppServices): Promise<void> {
  app.get('/compliance', async (req: FastifyRequest<{ Querystring: Record<string, unknown> }>, reply) => {
    const c = ctx(req);
    const rule = queryField(req.query, 'rule', 40);
    const player = queryField(req.query, 'player', 120);
    const flags = await s.complianceFlags.list(c.operator.id, { rule, player, limit: 200 });
    return reply.type('text/html; charset=utf-8').send(compliancePage({ user: c.user, flags, rule, player }));
  });
}
