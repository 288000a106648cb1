import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceMetrics, UNMATCHED_ROUTE } from './metrics';
import type { Tracing } from './tracing';

export interface HttpObservability {
  metrics: ServiceMetrics;
  tracing: Tracing | null;
  /** Bearer token GET /metrics requires; null serves it to anyone (refused in production by config). */
  metricsToken: string | null;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** Compares hashes, so neither the token's content nor its length leaks through timing. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match !== null && timingSafeEqual(digest(match[1]!), digest(token));
}

/**
 * Adds the server spans and GET /metrics to the root instance, before any route is registered, and
 * returns what records a finished request (its duration by route, a 429, the end of its span), which
 * the server calls from its one onResponse hook, so every route (and the not-found handler) is
 * measured.
 */
export function instrumentHttp(
  app: FastifyInstance,
  o: HttpObservability,
): (req: FastifyRequest, reply: FastifyReply) => void {
  const { metrics, tracing } = o;
  // Plain callbacks, not async hooks: no promise per request on the hot path.
  if (tracing) {
    // preValidation runs once the body is parsed; from here on the handler's awaits carry the span.
    app.addHook('preValidation', (req, _reply, done) => tracing.withServerSpan(req.raw, done));
    app.addHook('onRequestAbort', (req, done) => {
      tracing.endServerSpan(req.raw, req.routeOptions.url ?? UNMATCHED_ROUTE, 499);
      done();
    });
  }
  app.get('/metrics', { schema: { hide: true } }, async (req: FastifyRequest, reply: FastifyReply) => {
    if (o.metricsToken !== null && !bearerMatches(req.headers.authorization, o.metricsToken)) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="metrics"')
        .send({ error: 'UNAUTHORIZED', message: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>' });
    }
    const text = await metrics.registry.metrics();
    return reply.header('content-type', metrics.registry.contentType).header('cache-control', 'no-store').send(text);
  });

  return (req, reply) => {
    // The route pattern (/v1/rounds/:id), never the raw URL: one series per route, whatever the ids.
    const route = req.routeOptions.url ?? UNMATCHED_ROUTE;
    const status = reply.statusCode;
    metrics.httpDuration.observe(req.method, route, status, reply.elapsedTime / 1000);
    if (status === 429) metrics.rateLimited.inc({ surface: ServiceMetrics.surfaceOf(req.url) });
    tracing?.endServerSpan(req.raw, route, status);
  };
}
