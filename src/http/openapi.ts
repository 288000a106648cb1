import type { SwaggerTransformObject } from '@fastify/swagger';
import canonicalize from 'canonicalize';
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { OpenAPIV3, OpenAPIV3_1 } from 'openapi-types';

/**
 * Security schemes of the OpenAPI document. OpenAPI has no HMAC scheme, so each signing header is an
 * apiKey-type scheme and an operation requires all three of its surface together; the descriptions
 * say how the signature is computed. Tools (client generators, mock servers, catalogues) then know
 * which headers each operation needs without reading prose.
 */
const REQUEST_SIGNATURE =
  'lowercase hex HMAC-SHA256 keyed with the API secret over METHOD + "\\n" + PATH (with its query string) + "\\n" + ' +
  'TIMESTAMP + "\\n" + the raw body (empty for a GET)';

export const SECURITY_SCHEMES: Record<string, OpenAPIV3_1.SecuritySchemeObject> = {
  partnerApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'Surface A: the partner API key' },
  partnerSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'x-signature',
    description: `Surface A: ${REQUEST_SIGNATURE}`,
  },
  partnerTimestamp: {
    type: 'apiKey',
    in: 'header',
    name: 'x-timestamp',
    description: 'Surface A: milliseconds since epoch, within 5 minutes of the server clock (part of the signed text)',
  },
  operatorKey: { type: 'apiKey', in: 'header', name: 'X-Operator-Key', description: 'Surface B: the operator API key' },
  operatorSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Signature',
    description: `Surface B: ${REQUEST_SIGNATURE}`,
  },
  operatorTimestamp: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Timestamp',
    description: 'Surface B: milliseconds since epoch, within 5 minutes of the server clock (part of the signed text)',
  },
  serviceSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'x-service-signature',
    description:
      'Webhook deliveries: t=<ms>,v1=<hex HMAC-SHA256(endpoint secret, "<t>.<raw body>")>, ' +
      'one v1 per secret during a rotation',
  },
  standardWebhookSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'webhook-signature',
    description:
      'Surface A webhook deliveries (Standard Webhooks): v1,<base64 HMAC-SHA256(base64-decoded secret after whsec_, ' +
      '"<webhook-id>.<webhook-timestamp>.<raw body>")>, with the webhook-id and webhook-timestamp (seconds) headers',
  },
};

export type SecurityRequirement = Record<string, string[]>;

export const SURFACE_SECURITY: Record<'A' | 'B', SecurityRequirement[]> = {
  A: [{ partnerApiKey: [], partnerSignature: [], partnerTimestamp: [] }],
  B: [{ operatorKey: [], operatorSignature: [], operatorTimestamp: [] }],
};

/** Deliveries carry x-service-signature always, plus Standard Webhooks (A endpoints) or the request scheme (B). */
export const WEBHOOK_SECURITY: SecurityRequirement[] = [
  { serviceSignature: [] },
  { standardWebhookSignature: [] },
  { operatorKey: [], operatorSignature: [], operatorTimestamp: [] },
];

/** Every route registered in this scope (after the call) gets `security` in the document. */
export function documentSecurity(app: FastifyInstance, security: SecurityRequirement[]): void {
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ??= {}) as { security?: SecurityRequirement[] };
    schema.security ??= security;
  });
}

/** HTML pages and browser feeds are not part of the API: keep them out of the document. */
export function hideFromOpenApi(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ??= {}) as { hide?: boolean };
    schema.hide = true;
  });
}

export function withWebhookSecurity(
  webhooks: Record<string, OpenAPIV3_1.PathItemObject>,
): Record<string, OpenAPIV3_1.PathItemObject> {
  const out: Record<string, OpenAPIV3_1.PathItemObject> = {};
  for (const [name, item] of Object.entries(webhooks)) {
    out[name] = item.post ? { ...item, post: { ...item.post, security: WEBHOOK_SECURITY } } : item;
  }
  return out;
}

/**
 * @fastify/swagger marks every request body required. A route for which `takesNoBody` holds (one that
 * reads an absent body as `{}`) accepts a request without one, and its operation should say so: this
 * records such routes as they are added and returns the document transform that sets `required: false`.
 */
export function optionalBodies(
  app: FastifyInstance,
  takesNoBody: (route: RouteOptions) => boolean,
): SwaggerTransformObject {
  const operations: { method: string; path: string }[] = [];
  app.addHook('onRoute', (route) => {
    if (!takesNoBody(route)) return;
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const method of [route.method].flat()) operations.push({ method: method.toLowerCase(), path });
  });
  return (document) => {
    if (!('openapiObject' in document)) return document.swaggerObject;
    const paths = document.openapiObject.paths as
      | Record<string, Record<string, OpenAPIV3_1.OperationObject>>
      | undefined;
    for (const { method, path } of operations) {
      const body = paths?.[path]?.[method]?.requestBody as OpenAPIV3_1.RequestBodyObject | undefined;
      if (body) body.required = false;
    }
    return document.openapiObject;
  };
}

/**
 * The operationId of an operation that does not name its own: the method, the surface (`partner` for
 * Surface A's /api/public/v1, `operator` for Surface B's /v1) and the path's words, a parameter as `By` and
 * its name: POST /api/public/v1/place-bet is `postPartnerPlaceBet`, GET /v1/rounds/{round_id}
 * `getOperatorRoundsByRoundId`. Unique because method and path are, and stable while the path is: generated
 * clients and API catalogues name operations by it.
 */
export function operationIdOf(method: string, path: string): string {
  const words = [method.toLowerCase()];
  let rest = path;
  if (rest.startsWith('/api/public/v1/')) {
    words.push('partner');
    rest = rest.slice('/api/public/v1'.length);
  } else if (rest.startsWith('/v1/')) {
    words.push('operator');
    rest = rest.slice('/v1'.length);
  }
  for (const segment of rest.split('/').filter(Boolean)) {
    const param = /^\{(.+)\}$/.exec(segment);
    if (param) words.push('by', ...param[1]!.split(/[^A-Za-z0-9]+/));
    else words.push(...segment.split(/[^A-Za-z0-9]+/));
  }
  return words
    .filter(Boolean)
    .map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1)))
    .join('');
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Gives every operation of the document an operationId (see operationIdOf) unless its route set one. */
export function withOperationIds<T extends { paths?: unknown }>(document: T): T {
  const paths = (document.paths ?? {}) as Record<string, Record<string, { operationId?: string } | undefined>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (operation) operation.operationId ??= operationIdOf(method, path);
    }
  }
  return document;
}

/**
 * The operator's token bucket, on every answer to a request that reached it (see applyDecision in
 * surface/operator-rate-limit.ts).
 * Not required: a request refused before the bucket (401, 413, 415, or the failed-authentication budget's 429)
 * spent no token and carries none of them.
 */
export const RATE_LIMIT_HEADERS: Record<string, OpenAPIV3.NonArraySchemaObject> = {
  'ratelimit-limit': {
    type: 'string',
    pattern: '^[0-9]+$',
    description: "the operator's burst: requests the bucket holds when full",
  },
  'ratelimit-remaining': {
    type: 'string',
    pattern: '^[0-9]+$',
    description: 'requests left in the bucket after this one',
  },
  'ratelimit-reset': {
    type: 'string',
    pattern: '^[0-9]+$',
    description: 'seconds until the bucket is full again',
  },
};

/** Statuses a signed request can get before its bucket is reached, so never with the rate-limit headers. */
const BEFORE_THE_BUCKET = new Set(['401', '413', '415']);

/**
 * Declares the rate-limit headers on every response of every signed operation (those whose `security` is a
 * surface's), so generated clients expose them; the routes' own schemas need not repeat them.
 */
export function withRateLimitHeaders<T extends { paths?: unknown }>(document: T): T {
  const signed = new Set(Object.values(SURFACE_SECURITY).map((requirement) => JSON.stringify(requirement)));
  const paths = (document.paths ?? {}) as Record<string, Record<string, OpenAPIV3_1.OperationObject | undefined>>;
  for (const item of Object.values(paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!operation || !signed.has(JSON.stringify(operation.security ?? null))) continue;
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (BEFORE_THE_BUCKET.has(status) || '$ref' in response) continue;
        const headers = (response.headers ??= {});
        for (const [name, schema] of Object.entries(RATE_LIMIT_HEADERS)) {
          headers[name] ??= { schema, required: false, description: schema.description };
        }
      }
    }
  }
  return document;
}

/** Seconds to wait, on every 429 and 503 (rate limited, failed-authentication budget spent, restarting). */
export const RETRY_AFTER = {
  'retry-after': {
    type: 'string',
    pattern: '^[0-9]+$',
    description: 'seconds to wait before sending the request again',
  },
};

/**
 * A response schema that also declares headers of the answer, for the document (and the clients generated
 * from it): @fastify/swagger moves `headers` into the response's header list; the serializer reads only
 * the body's properties.
 */
export function withResponseHeaders<T extends object>(
  schema: T,
  headers: Record<string, Record<string, unknown>>,
): T & { headers: Record<string, unknown> } {
  const own = (schema as { headers?: Record<string, unknown> }).headers ?? {};
  return Object.assign({}, schema, { headers: { ...own, ...headers } });
}

/** `responses` with `headers` declared on each of `statuses` it has. */
export function withHeadersOn<T extends Record<number, object>>(
  responses: T,
  statuses: readonly number[],
  headers: Record<string, Record<string, unknown>>,
): T {
  const out: Record<number, object> = { ...responses };
  for (const status of statuses) {
    const schema = out[status];
    if (schema) out[status] = withResponseHeaders(schema, headers);
  }
  return out as T;
}

/** The error responses of a signed route, 429 and 503 declaring Retry-After. */
export function withRetryAfter<T extends Record<number, object>>(errors: T): T {
  return withHeadersOn(errors, [429, 503], RETRY_AFTER);
}

/** The names a schema may carry in its JSON Schema `title` to be published as components.schemas[title]. */
const SCHEMA_NAME = /^[A-Z][A-Za-z0-9]*$/;

/** Keys whose values are data (examples, defaults, constants), not schemas: a `title` there names nothing. */
const DATA_KEYS = new Set(['example', 'examples', 'default', 'const', 'enum']);

type Json = Record<string, unknown>;
const isJsonObject = (value: unknown): value is Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Replaces every schema titled with a name (SCHEMA_NAME) by a `$ref` to components.schemas[name], innermost
 * first, so a named shape nested in another (a bet in a page of bets) is referenced there too.
 */
function referenceNamed(node: unknown, named: Map<string, { schema: Json; text: string }>): unknown {
  if (Array.isArray(node)) return node.map((item) => referenceNamed(item, named));
  if (!isJsonObject(node)) return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) out[key] = DATA_KEYS.has(key) ? value : referenceNamed(value, named);
  // @fastify/swagger writes a route schema's `const` as a one-value `enum`; the webhooks section it passes
  // through as given. One spelling, so a shape used in both compares equal and generators see one form.
  if ('const' in out && !('enum' in out)) {
    out.enum = [out.const];
    delete out.const;
  }
  const name = out.title;
  if (typeof name !== 'string' || !SCHEMA_NAME.test(name)) return out;
  const text = canonicalize(out) ?? '';
  const first = named.get(name);
  // Two shapes under one name would make generated types lie about one of them: refuse to publish that.
  if (first === undefined) named.set(name, { schema: out, text });
  else if (first.text !== text) {
    throw new Error(`two different schemas are named ${name} in the OpenAPI document:\n${first.text}\n${text}`);
  }
  return { $ref: `#/components/schemas/${name}` };
}

// Parameters are left inline: @fastify/swagger moves a parameter schema's description onto the parameter,
// so its copy there is not the named shape.
interface OperationSchemas {
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

/**
 * Publishes every named shape (a route or event schema whose `title` is its name) once, in components.schemas,
 * and references it from the operations of `paths` and `webhooks`. The route schemas keep driving validation
 * and serialization as they are; only the document is reorganised, so code generators produce named types
 * and the document carries each shape once.
 */
export function withNamedSchemas<T extends { paths?: unknown; webhooks?: unknown; components?: unknown }>(
  document: T,
): T {
  const named = new Map<string, { schema: Json; text: string }>();
  const reference = (holder: { schema?: unknown } | undefined) => {
    if (holder?.schema !== undefined) holder.schema = referenceNamed(holder.schema, named);
  };
  for (const items of [document.paths, document.webhooks]) {
    for (const item of Object.values((items ?? {}) as Record<string, Record<string, OperationSchemas | undefined>>)) {
      for (const method of HTTP_METHODS) {
        const operation = item[method];
        if (!operation) continue;
        for (const media of Object.values(operation.requestBody?.content ?? {})) reference(media);
        for (const response of Object.values(operation.responses ?? {})) {
          for (const media of Object.values(response.content ?? {})) reference(media);
        }
      }
    }
  }
  const schemas = componentsOf(document, 'schemas');
  for (const name of [...named.keys()].sort()) schemas[name] = named.get(name)!.schema;
  return document;
}

function componentsOf(document: object, kind: 'schemas' | 'headers' | 'parameters'): Json {
  const components = ((document as { components?: Json }).components ??= {});
  return ((components[kind] as Json | undefined) ??= {});
}

/**
 * Declares once, in components.headers and components.parameters, each response header and each header
 * parameter that operations repeat word for word (rate limits, Retry-After, the replay mark, the signing
 * headers), and references it from each of them. A header of the same name that reads differently somewhere
 * stays inline there.
 */
export function withSharedHeaders<T extends { paths?: unknown }>(document: T): T {
  const headers = componentsOf(document, 'headers');
  const parameters = componentsOf(document, 'parameters');
  const share = (declared: Json, kind: 'headers' | 'parameters', key: string, value: unknown): unknown => {
    if (!isJsonObject(value) || '$ref' in value) return value;
    declared[key] ??= value;
    const same = canonicalize(declared[key]) === canonicalize(value);
    return same ? { $ref: `#/components/${kind}/${key}` } : value;
  };
  const paths = (document.paths ?? {}) as Record<string, Record<string, OpenAPIV3_1.OperationObject | undefined>>;
  for (const item of Object.values(paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (!operation) continue;
      operation.parameters = operation.parameters?.map((parameter) =>
        'in' in parameter && parameter.in === 'header'
          ? (share(parameters, 'parameters', `header.${parameter.name}`, parameter) as typeof parameter)
          : parameter,
      );
      for (const response of Object.values(operation.responses ?? {})) {
        if ('$ref' in response || !response.headers) continue;
        for (const [name, header] of Object.entries(response.headers)) {
          response.headers[name] = share(headers, 'headers', name, header) as typeof header;
        }
      }
    }
  }
  return document;
}
