import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type IncomingMessage, STATUS_CODES, type ServerOptions, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { DomainError, type ErrorCode } from '../errors/codes';
import type { AppServices } from '../services';
import { absentBodyAsEmpty, bodyEncodingRefusal, decorateRawBody, parseJsonBody } from './json-body';
import { lazyChildLoggerFactory, requestLogger } from './request-logger';
import { announceDeprecations } from './deprecation';
import { surfaceA, surfaceARoutes } from './surface-a/routes';
import { surfaceB } from './surface-b/routes';
import { errorHandler } from './surface/error-classification';
import { decorateAuthenticatedRequest } from './surface/request-fields';
import type { Surface } from './surface/surface';
import { publicRoutes } from './public-routes';
import { openApiWebhooks } from '../webhooks/payloads';
import {
  optionalBodies,
  SECURITY_SCHEMES,
  withOperationIds,
  withNamedSchemas,
  withRateLimitHeaders,
  withSharedHeaders,
  withWebhookSecurity,
} from './openapi';
import { instrumentHttp, type HttpObservability } from '../observability/http';

export type RouteModule = (app: FastifyInstance, services: AppServices) => Promise<void>;

export interface HttpOptions {
  /** Extra route modules mounted by the composition root: prefix → module. */
  modules?: { prefix: string; register: RouteModule }[];
  /** Request metrics, server spans and GET /metrics. */
  observability?: HttpObservability;
}

/** The /docs page's signer for sandbox keys, served as one of Swagger UI's theme scripts. */
const DOCS_SIGNING_SCRIPT = readFileSync(new URL('./static/docs-signing.js', import.meta.url), 'utf8');
const DOCS_SIGNING_STYLE =
  '#sandbox-signing { font: 14px sans-serif; padding: .6rem 1rem; background: #f1e9f8; ' +
  'border-bottom: 2px solid #5b2a86; display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; }';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Which surface's error shape a request outside every surface scope gets: A under its prefix, else B's. */
const surfaceFor = (url: string | undefined): Surface => (url?.startsWith('/api/public/') ? surfaceA : surfaceB);
const REQUEST_LINE_A = /^[A-Z]+ \/api\/public\//;

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (oversized headers or URL, a
 * malformed request line, a client too slow to send its headers or body) are answered in the
 * surface's error shape too, picked from the request line when the parser kept it, or from the URL
 * of the request in flight.
 */
function clientErrorHandler(error: Error & { code?: string; rawPacket?: unknown }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // A request whose body stopped arriving has already been handed to Fastify: its response is on
  // the socket (Node's `_httpMessage`, what Node's own handler looks at). If that response has begun,
  // another one would corrupt the stream: the connection is only closed.
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (inFlight?.headersSent) return void socket.destroy();
  const line = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.subarray(0, 64).toString('latin1') : '';
  const surface = REQUEST_LINE_A.test(line) || surfaceFor(inFlight?.req?.url) === surfaceA ? surfaceA : surfaceB;
  const [code, message]: [ErrorCode, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['HEADERS_TOO_LARGE', 'the request line and headers are larger than the server accepts']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['REQUEST_TIMEOUT', 'the request was not received in time']
        : ['VALIDATION_FAILED', 'the request is not valid HTTP/1.1'];
  writeRawError(socket, surface, code, message);
}

/** An error in the surface's shape written straight to the socket, which is then closed. */
function writeRawError(socket: Duplex, surface: Surface, code: ErrorCode, message: string): void {
  const status = surface.status[code];
  const body = JSON.stringify(surface.errorBody(code, message, randomUUID()));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Requests Node answers by itself unless asked not to: an `Expect` other than 100-continue (an empty
 * 417) and CONNECT (the socket dropped without a word). Both get an error in the surface's shape.
 */
function answerWhatNodeWouldDrop(server: FastifyInstance['server']): void {
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const surface = surfaceFor(req.url);
    const message = 'the Expect header may only be 100-continue';
    const body = JSON.stringify(surface.errorBody('VALIDATION_FAILED', message, randomUUID()));
    res.writeHead(surface.status.VALIDATION_FAILED, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body);
  });
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    writeRawError(socket, surfaceFor(req.url), 'NOT_FOUND', `no route ${req.method} ${req.url ?? ''}`);
  });
}

/**
 * Only the configured proxies may speak for the client (X-Forwarded-For / -Proto); without them the
 * socket's peer is the client, whatever headers it sends. A hop count trusts the nearest `hops`
 * addresses of the chain (Fastify itself ignores a bare number, since it cannot tell a proxy from a
 * client that connects directly: hops are only safe when nothing reaches the port but the proxies).
 */
type TrustProxy = boolean | string[] | ((address: string, hop: number) => boolean);

function proxyTrust(trusted: number | string[] | null): TrustProxy {
  if (trusted === null) return false;
  if (typeof trusted === 'number') return (_address, hop) => hop < trusted;
  return trusted;
}

const rootErrorHandlers = { A: errorHandler(surfaceA), B: errorHandler(surfaceB) };
const rootErrors = (url: string | undefined) => rootErrorHandlers[surfaceFor(url).name];

/**
 * Node's request deadlines: the whole request (headers and body) within `requestTimeoutMs`, the
 * headers within the same or 60 s if shorter (Node requires headersTimeout <= requestTimeout). Node
 * looks for expired requests only every `connectionsCheckingInterval` (30 s by default), so it is a
 * tenth of the timeout (at least 100 ms): a 408 comes within about 1.1 × the setting. Only requests
 * still being received are checked; an idle keep-alive connection is the keep-alive timeout's.
 */
export function requestDeadlines(
  requestTimeoutMs: number,
): Required<Pick<ServerOptions, 'requestTimeout' | 'headersTimeout' | 'connectionsCheckingInterval'>> {
  return {
    requestTimeout: requestTimeoutMs,
    headersTimeout: Math.min(60_000, requestTimeoutMs),
    connectionsCheckingInterval: Math.max(100, Math.floor(requestTimeoutMs / 10)),
  };
}

/** Builds the HTTP server: parsing, validation settings, OpenAPI, and the surfaces. */
export async function buildHttpServer(s: AppServices, options: HttpOptions = {}): Promise<FastifyInstance> {
  // Node would answer an HTTP/1.1 request without Host itself, a 400 with an empty body and no
  // code: the onRequest hook below refuses it instead, in the surface's error shape.
  // What measures a request (onResponse below); frameworkErrors, built first, reads it once it is set.
  let observeUnhooked: ((req: FastifyRequest, reply: FastifyReply) => void) | null = null;
  const deadlines = { ...requestDeadlines(s.config.requestTimeoutMs), requireHostHeader: false };
  // Fastify hands `https` (else `http`) to Node's createServer: the deadlines go in whichever is used.
  const https = s.config.tls
    ? { key: readFileSync(s.config.tls.keyFile), cert: readFileSync(s.config.tls.certFile), ...deadlines }
    : null;
  // A pino Logger instance narrows the logger type; everything here needs only the base instance.
  const app = Fastify({
    loggerInstance: s.logger,
    ...(https ? { https } : { http: deadlines }),
    // Fastify sets this on the server after creating it (its default, 0, would turn Node's off).
    requestTimeout: deadlines.requestTimeout,
    bodyLimit: s.config.bodyLimitBytes,
    // Fastify's own request logs (two lines, through a child logger each) would cost a third of the
    // throughput: the onResponse hook below writes one cheaper line (REQUEST_LOG).
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLoggerFactory,
    trustProxy: proxyTrust(s.config.trustedProxies),
    // Clients may pass their own correlation id; otherwise each request gets one, echoed back and
    // used as the trace_id of any 5xx body.
    genReqId: (req) => {
      // With tracing on, the request id is the trace id, so logs and error bodies name the trace.
      if (options.observability?.tracing) return options.observability.tracing.startServerSpan(req);
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
    clientErrorHandler,
    // Errors the router raises before any route runs (a bad percent-encoding, a path parameter
    // over the length limit) take the surface's shape like every other error.
    frameworkErrors: (error, req, reply) => {
      // Answered on a route context made before any hook was added: neither onSend (x-request-id)
      // nor onResponse (request metrics, the server span) runs for these, so both are done here.
      void (reply as FastifyReply).header('x-request-id', String(req.id));
      const measure = observeUnhooked;
      if (measure) reply.raw.once('finish', () => measure(req as FastifyRequest, reply as FastifyReply));
      if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
        const surface = surfaceFor(req.url);
        const message = 'a path segment is longer than any identifier of this API';
        const body = surface.errorBody('URI_TOO_LONG', message, String(req.id));
        return void (reply as FastifyReply).status(surface.status.URI_TOO_LONG).send(body);
      }
      rootErrors(req.url)(error as Error, req as FastifyRequest, reply as FastifyReply);
    },
    return503OnClosing: false,
  }) as unknown as FastifyInstance;
  answerWhatNodeWouldDrop(app.server);

  // Whatever no surface scope handles (a path outside every prefix, a body refused before routing)
  // is answered in a surface's shape, never Fastify's own.
  app.setErrorHandler((error: Error, req, reply) => rootErrors(req.url)(error, req, reply));
  app.setNotFoundHandler((req, reply) => {
    const surface = surfaceFor(req.url);
    const body = surface.errorBody('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`, String(req.id));
    void reply.status(404).send(body);
  });

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
    // Fastify picks this parser by media type alone: a gzip-labelled body or charset=utf-16 is
    // refused here (415), like any other content type, before it is parsed.
    const refusal = bodyEncodingRefusal(req.headers);
    if (refusal !== undefined) return done(refusal, undefined);
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  decorateAuthenticatedRequest(app);
  decorateRawBody(app);

  // During shutdown, responses to requests already in flight close their keep-alive connection,
  // so the server is not left waiting for clients to hang up.
  let closing = false;
  // Served over TLS (natively or by the declared proxy): browsers must never fall back to plain HTTP.
  // Not in development, where a laptop's localhost would be pinned to https for a year.
  const hsts = Boolean(s.config.tls || s.config.trustProxyTls) && s.config.env !== 'development';
  const observe = options.observability ? instrumentHttp(app, options.observability) : null;
  const logRequest = requestLogger(s.logger, s.config.requestLog);
  // What every answered request goes through once: its access-log line, then its metrics and span.
  const answered = (req: FastifyRequest, reply: FastifyReply): void => {
    logRequest(req, reply);
    if (observe) observe(req, reply);
  };
  observeUnhooked = answered;
  // One hook per stage for every request, each a plain callback: every hook costs a call through
  // Fastify's hook runner, and an async hook a promise and a microtask turn as well.
  app.addHook('onRequest', (req, reply, done) => {
    // A NUL in the path or query (%00) names nothing here, and PostgreSQL text cannot even hold it:
    // refuse it before any route looks it up.
    if (req.url.includes('%00')) {
      return done(new DomainError('VALIDATION_FAILED', 'the URL contains a NUL character (%00)'));
    }
    // HTTP/1.1 requires Host (RFC 9112, 3.2); HTTP/1.0 may leave it out.
    if (req.headers.host === undefined && req.raw.httpVersion === '1.1') {
      return done(new DomainError('VALIDATION_FAILED', 'an HTTP/1.1 request must carry a Host header'));
    }
    if (!closing) return done();
    // Requests that arrive on open connections after shutdown began are refused in the surface's
    // own error shape (Fastify's built-in 503 would not carry our codes).
    const body = surfaceFor(req.url).errorBody(
      'SERVICE_UNAVAILABLE',
      'the service is restarting; retry shortly',
      String(req.id),
    );
    void reply.code(503).header('retry-after', '1').header('connection', 'close').send(body);
  });
  app.addHook('onSend', (req, reply, payload, done) => {
    reply.header('x-request-id', String(req.id));
    if (hsts) reply.header('strict-transport-security', 'max-age=31536000; includeSubDomains');
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onResponse', (req, reply, done) => {
    answered(req, reply);
    done();
  });
  announceDeprecations(app);
  app.addHook('preClose', async () => {
    closing = true;
  });

  const markOptionalBodies = optionalBodies(app, (route) => [route.preValidation].flat().includes(absentBodyAsEmpty));
  await app.register(swagger, {
    // Every operation named (operationId), for generated clients and catalogues.
    transformObject: (document) =>
      withSharedHeaders(withNamedSchemas(withRateLimitHeaders(withOperationIds(markOptionalBodies(document))))),
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Round-based betting service',
        version: '1.0.0',
        description:
          'Surface A (`/api/public/v1`, partner API): Crash. ' +
          'Surface B (`/v1`, seamless-wallet operator API): Stock Race. ' +
          'Every request is signed: hex HMAC-SHA256 over METHOD\\nPATH\\nTIMESTAMP\\nBODY with the operator secret. ' +
          'See docs/ in the repository.',
      },
      servers: [{ url: s.config.publicBaseUrl, description: 'this deployment (PUBLIC_BASE_URL)' }],
      components: { securitySchemes: SECURITY_SCHEMES },
      tags: [
        { name: 'Crash', description: 'Surface A: Crash game' },
        { name: 'Stock Race', description: 'Surface B: Stock Race and the seamless wallet' },
        { name: 'Webhooks', description: 'Webhook endpoints and signature verification' },
        { name: 'Fairness', description: 'Recompute any round from its revealed seed' },
        { name: 'Compliance', description: 'Flags raised by the per-operator compliance rules' },
        {
          name: 'Sandbox',
          description: 'Test mode: scripted outcomes, round timing and a simulated wallet (test keys only)',
        },
      ],
      // OpenAPI 3.1 outbound webhooks: the signed payload of every event type.
      webhooks: withWebhookSecurity(openApiWebhooks()),
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // "Try it out" signs with a sandbox key typed into the page (static/docs-signing.js).
    theme: {
      js: [{ filename: 'docs-signing.js', content: DOCS_SIGNING_SCRIPT }],
      css: [{ filename: 'docs-signing.css', content: DOCS_SIGNING_STYLE }],
    },
    // Try it out goes to the first server: the host the page was loaded from, when PUBLIC_BASE_URL
    // names another (a local run on another port, a staging host), so the page calls where it lives.
    transformSpecification: (document, req) => {
      const here = `${req.protocol}://${req.host}`;
      const servers = (document as { servers?: { url: string }[] }).servers ?? [];
      if (servers.some((server) => server.url === here)) return document;
      return { ...document, servers: [{ url: here, description: 'the host this page was loaded from' }, ...servers] };
    },
    uiConfig: {
      // Runs in the browser, self-contained: it hands each request to the page's signer.
      requestInterceptor: (request) =>
        (globalThis as { sandboxSigner?: (r: typeof request) => Promise<typeof request> }).sandboxSigner?.(request) ??
        request,
    },
  });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // Probes for process managers and load balancers; not part of the operator API (hidden from the document).
  app.get('/healthz', { schema: { hide: true } }, async (_req, reply) => {
    void reply.header('cache-control', 'no-store');
    return { ok: true };
  });
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const report = await s.readiness.report();
    return reply
      .code(report.ready ? 200 : 503)
      .header('cache-control', 'no-store')
      .send(report);
  });

  await app.register(async (scope) => publicRoutes(scope, s));
  await app.register(async (scope) => surfaceARoutes(scope, s), { prefix: '/api/public/v1' });
  for (const m of options.modules ?? []) {
    await app.register(async (scope) => m.register(scope, s), { prefix: m.prefix });
  }
  return app;
}
