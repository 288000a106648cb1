import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDomainError } from '../../errors/codes';
import type { AppServices } from '../../services';
import { ctx } from '../context';
import { field, fields, notice, type FormBody, type NoticeKey } from '../forms';
import { deliveryLog, endpointPage, secretShownPage, webhooksPage, type DeliveryWithAttempts } from '../views/webhooks';

type IdReq = FastifyRequest<{ Params: { id: string }; Querystring: Record<string, string> }>;
const LOG_SIZE = 25;

const htmlReply = (reply: FastifyReply, body: string, status = 200) =>
  reply.status(status).type('text/html; charset=utf-8').send(body);

/**
 * Webhook endpoints through the webhook service (the same calls as the management API): list, add,
 * edit, delete, rotate the secret, send a test, read the delivery log and re-send dead letters.
 */
export async function webhookRoutes(app: FastifyInstance, services: AppServices): Promise<void> {
  const log = async (operatorId: string, endpointId: string): Promise<DeliveryWithAttempts[]> => {
    const list = await services.webhooks.listDeliveries(operatorId, { endpointId, limit: LOG_SIZE });
    return Promise.all(list.map((d) => services.webhooks.getDelivery(operatorId, d.delivery_id)));
  };
  const back = (reply: FastifyReply, id: string, key: NoticeKey) =>
    reply.redirect(`/dashboard/webhooks/${encodeURIComponent(id)}?notice=${key}`, 303);

  app.get('/webhooks', async (req: FastifyRequest<{ Querystring: Record<string, string> }>, reply) => {
    const c = ctx(req);
    return htmlReply(
      reply,
      webhooksPage({
        user: c.user,
        endpoints: await services.webhooks.listEndpoints(c.operator.id),
        notice: notice(req.query.notice),
      }),
    );
  });

  app.post('/webhooks', async (req, reply) => {
    const c = ctx(req);
    const body = req.body as FormBody;
    const input = {
      url: field(body, 'url').trim(),
      events: fields(body, 'events'),
      surface: field(body, 'surface') === 'B' ? ('B' as const) : ('A' as const),
    };
    try {
      const created = await services.webhooks.createEndpoint(c.operator.id, input);
      return htmlReply(
        reply,
        secretShownPage({
          user: c.user,
          title: 'Endpoint added',
          what: `Signing secret for ${created.url}`,
          secret: created.secret,
          previousExpiresAt: null,
          back: `/dashboard/webhooks/${created.endpoint_id}`,
          backLabel: 'Go to the endpoint and its delivery log',
        }),
      );
    } catch (error) {
      if (!isDomainError(error)) throw error;
      // The form comes back with what was typed and the reason, instead of a dead-end error page.
      const endpoints = await services.webhooks.listEndpoints(c.operator.id);
      return htmlReply(
        reply,
        webhooksPage({ user: c.user, endpoints, error: error.message, form: { url: input.url, events: input.events } }),
        400,
      );
    }
  });

  app.get('/webhooks/:id', async (req: IdReq, reply) => {
    const c = ctx(req);
    const endpoint = await services.webhooks.getEndpoint(c.operator.id, req.params.id);
    const entries = await log(c.operator.id, endpoint.endpoint_id);
    return htmlReply(
      reply,
      endpointPage({
        user: c.user,
        endpoint,
        log: deliveryLog({ endpointId: endpoint.endpoint_id, deliveries: entries, csrf: c.user.csrfToken }),
        notice: notice(req.query.notice),
      }),
    );
  });

  // The log alone, for the page's periodic refresh.
  app.get('/webhooks/:id/log', async (req: IdReq, reply) => {
    const c = ctx(req);
    const endpoint = await services.webhooks.getEndpoint(c.operator.id, req.params.id);
    const entries = await log(c.operator.id, endpoint.endpoint_id);
    return htmlReply(
      reply,
      deliveryLog({ endpointId: endpoint.endpoint_id, deliveries: entries, csrf: c.user.csrfToken }).value,
    );
  });

  app.post('/webhooks/:id', async (req: IdReq, reply) => {
    const c = ctx(req);
    const body = req.body as unknown as FormBody;
    const patch = {
      url: field(body, 'url').trim(),
      events: fields(body, 'events'),
      enabled: field(body, 'enabled') === '1',
    };
    try {
      await services.webhooks.updateEndpoint(c.operator.id, req.params.id, patch);
      return back(reply, req.params.id, 'endpoint-updated');
    } catch (error) {
      if (!isDomainError(error) || error.code === 'WEBHOOK_ENDPOINT_NOT_FOUND') throw error;
      const endpoint = await services.webhooks.getEndpoint(c.operator.id, req.params.id);
      const entries = await log(c.operator.id, endpoint.endpoint_id);
      return htmlReply(
        reply,
        endpointPage({
          user: c.user,
          endpoint: {
            ...endpoint,
            url: patch.url,
            events: patch.events as typeof endpoint.events,
            enabled: patch.enabled,
          },
          log: deliveryLog({ endpointId: endpoint.endpoint_id, deliveries: entries, csrf: c.user.csrfToken }),
          error: error.message,
        }),
        400,
      );
    }
  });

  app.post('/webhooks/:id/delete', async (req: IdReq, reply) => {
    await services.webhooks.deleteEndpoint(ctx(req).operator.id, req.params.id);
    return reply.redirect('/dashboard/webhooks?notice=endpoint-deleted', 303);
  });

  app.post('/webhooks/:id/rotate', async (req: IdReq, reply) => {
    const c = ctx(req);
    const rotated = await services.webhooks.rotateSecret(c.operator.id, req.params.id);
    return htmlReply(
      reply,
      secretShownPage({
        user: c.user,
        title: 'Secret rotated',
        what: `New signing secret for ${rotated.url}`,
        secret: rotated.secret,
        previousExpiresAt: rotated.previous_secret_expires_at,
        back: `/dashboard/webhooks/${rotated.endpoint_id}`,
        backLabel: 'Back to the endpoint',
      }),
    );
  });

  app.post('/webhooks/:id/test', async (req: IdReq, reply) => {
    await services.webhooks.sendTestEvent(ctx(req).operator.id, req.params.id);
    return back(reply, req.params.id, 'test-sent');
  });

  app.post(
    '/webhooks/:id/deliveries/:delivery/resend',
    async (req: FastifyRequest<{ Params: { id: string; delivery: string } }>, reply) => {
      const c = ctx(req);
      const d = await services.webhooks.getDelivery(c.operator.id, req.params.delivery);
      await services.webhooks.resend(c.operator.id, d.delivery_id);
      return back(reply, d.endpoint_id, 'resent');
    },
  );
}
