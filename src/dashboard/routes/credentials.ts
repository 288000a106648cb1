import type { FastifyInstance } from 'fastify';
import { DomainError } from '../../errors/codes';
import type { AppServices } from '../../services';
import { ctx } from '../context';
import { field, type FormBody } from '../forms';
import { credentialsPage } from '../views/credentials';
import { secretShownPage } from '../views/webhooks';

/** The operator's API key, its secret rotation (OperatorService.rotateSecret) and the overlap window. */
export async function credentialRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  app.get('/credentials', async (req, reply) => {
    const c = ctx(req);
    const html = credentialsPage({
      user: c.user,
      operator: c.operator,
      overlapMs: services.config.secretRotationOverlapMs,
      now: services.clock.now(),
    });
    return reply.type('text/html; charset=utf-8').send(html);
  });

  app.post('/credentials/rotate', async (req, reply) => {
    const c = ctx(req);
    if (field(req.body as FormBody, 'confirm') !== '1')
      throw new DomainError('VALIDATION_FAILED', 'tick the confirmation box to rotate the secret');
    const r = await services.operators.rotateSecret(c.operator.id);
    const html = secretShownPage({
      user: c.user,
      title: 'API secret rotated',
      what: `New API secret for key ${c.operator.apiKey}`,
      secret: r.apiSecret,
      previousExpiresAt: r.previousSecretExpiresAt,
      back: '/dashboard/credentials',
      backLabel: 'Back to credentials',
    });
    return reply.type('text/html; charset=utf-8').send(html);
  });
}
