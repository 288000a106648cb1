import Fastify, { LogController, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AppServices } from '../services';
import { parseJsonBody } from './json-body';
import { lazyChildLoggerFactory, logsAt } from './request-logger';
import { announceDeprecations } from './deprecation';
import { closeAllStreams } from './sse';
import { surfaceARoutes } from './surface-a/routes';
import { publicRoutes } from './public-routes';
import { openApiWebhooks } from '../webhooks/payloads';
import { SECURITY_SCHEMES, withWebhookSecurity } from './openapi';

export type RouteModule = (app: FastifyInstance, services: AppServices) => Promise<void>;

export interface HttpOptions {
  /** Extra route modules mounted by the composition root: prefix → module. */
  modules?: { prefix: string; register: RouteModule }[];
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the HTTP server: parsing, validation settings, OpenAPI, and the surfaces. */
export async function buildHttpServer(s: AppServices, options: HttpOptions = {}): Promise<FastifyInstance> {
  const https = s.config.tls ? { key: readFileSync(s.config.tls.keyFile), cert: readFileSync(s.config.tls.certFile) } : null;
  // A pino Logger instance narrows the logger type; everything here needs only the base instance.
  const app = Fastify({
    loggerInstance: s.logger,
    ...(https ? { https } : {}),
    bodyLimit: s.config.bodyLimitBytes,
    // Per-request info logs would cost a third of the throughput; completions are logged below
    // at debug, failures at warn/error.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLoggerFactory,
    trustProxy: s.config.trustProxyTls,
    // Clients may pass their own correlation id; otherwise each request gets one, echoed back and
    // used as the trace_id of any 5xx body.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    ajv: {
      customOptions: {
        // Unknown fields are refused, not silently dropped; a "5" is not the number 5.
        removeAdditional: false,
        coerceTypes: false,
        useDefaults: false,
        allErrors: false,
        verbose: true,
      },
    },
    routerOptions: { ignoreTrailingSlash: true },
    return503OnClosing: false,
  }) as unknown as FastifyInstance;

  // Unknown request fields are refused, query strings included: an API route that declares no
  // query parameters accepts none (a typo such as ?limt=5 is an error, not silently ignored).
  app.addHook('onRoute', (route) => {
    if (!/^\/(api\/public\/v1|v1)\//.test(route.url)) return;
    const schema = (route.schema ??= {}) as { querystring?: unknown };
    schema.querystring ??= { type: 'object', properties: {}, additionalProperties: false };
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    req.rawBody = body as Buffer;
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  // During shutdown, responses to requests already in flight close their keep-alive connection,
  // so the server is not left waiting for clients to hang up.
  let closing = false;
  // Hooks on every request are plain callbacks, not async functions: each async hook costs a
  // promise and a microtask turn per request, and these do nothing that needs to wait.
  app.addHook('onSend', (req, reply, payload, done) => {
    reply.header('x-request-id', String(req.id));
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onResponse', (req, reply, done) => {
    const failed = reply.statusCode >= 500;
    if (failed || logsAt(req.log, 'debug')) {
      // Player launch tokens travel in the query string: never let them reach the logs.
      const url = req.url.replace(/([?&]token=)[^&]*/g, '$1[redacted]');
      const entry = { reqId: req.id, method: req.method, url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) };
      if (failed) req.log.error(entry, 'request failed');
      else req.log.debug(entry, 'request completed');
    }
    done();
  });
  announceDeprecations(app);
  app.addHook('onClose', async () => closeAllStreams());
  // Requests that arrive on open connections after shutdown began are refused in the surface's
  // own error shape (Fastify's built-in 503 would not carry our codes).
  app.addHook('onRequest', (req, reply, done) => {
    if (!closing) return done();
    const message = 'the service is restarting; retry shortly';
    const body = req.url.startsWith('/api/public/') ? { error: message, code: 'SERVICE_UNAVAILABLE' } : { error: 'SERVICE_UNAVAILABLE', message };
    void reply.code(503).header('retry-after', '1').header('connection', 'close').send(body);
  });
  app.addHook('preClose', async () => {
    closing = true;
    closeAllStreams();
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Round-based betting service',
        version: '1.0.0',
        description:
          'Surface A (`/api/public/v1`, partner API): Crash. Surface B (`/v1`, seamless-wallet operator API): Stock Race. ' +
          'Every request is signed: hex HMAC-SHA256 over METHOD\\nPATH\\nTIMESTAMP\\nBODY with the operator secret. See docs/ in the repository.',
      },
      servers: [{ url: s.config.publicBaseUrl, description: 'this deployment (PUBLIC_BASE_URL)' }],
      components: { securitySchemes: SECURITY_SCHEMES },
      tags: [
        { name: 'Crash', description: 'Surface A: Crash game' },
        { name: 'Stock Race', description: 'Surface B: Stock Race and the seamless wallet' },
        { name: 'Webhooks', description: 'Webhook endpoints and signature verification' },
        { name: 'Fairness', description: 'Recompute any round from its revealed seed' },
        { name: 'Compliance', description: 'Flags raised by the per-operator compliance rules' },
      ],
      // OpenAPI 3.1 outbound webhooks: the signed payload of every event type.
      webhooks: withWebhookSecurity(openApiWebhooks()),
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // Probes for process managers and load balancers; not part of the operator API (hidden from the document).
  app.get('/healthz', { schema: { hide: true } }, async (_req, reply) => {
    void reply.header('cache-control', 'no-store');
    return { ok: true };
  });
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const report = await s.readiness.report();
    return reply.code(report.ready ? 200 : 503).header('cache-control', 'no-store').send(report);
  });

  await app.register(async (scope) => publicRoutes(scope, s));
  await app.register(async (scope) => surfaceARoutes(scope, s), { prefix: '/api/public/v1' });
  for (const m of options.modules ?? []) {
    await app.register(async (scope) => m.register(scope, s), { prefix: m.prefix });
  }
  return app;
}
