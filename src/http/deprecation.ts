import type { FastifyContextConfig, FastifyInstance, onSendHookHandler } from 'fastify';

/** Marks a route as deprecated: `config: { deprecation: { since, sunset, link } }` in its options. */
export interface Deprecation {
  /** When it was deprecated (RFC 9745 `Deprecation: @<epoch seconds>`). */
  since: Date;
  /** When it stops working (RFC 8594 `Sunset`, an HTTP date). */
  sunset: Date;
  /** Where the replacement is documented. */
  link?: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    deprecation?: Deprecation;
  }
}

/**
 * v1 changes only additively; when a route is to go, every response from it says so in headers
 * that client libraries and API gateways understand, long before the Sunset date.
 */
export function announceDeprecations(app: FastifyInstance): void {
  // Only deprecated routes get the hook: the others pay nothing per request.
  app.addHook('onRoute', (route) => {
    const d = (route.config as FastifyContextConfig | undefined)?.deprecation;
    if (!d) return;
    const headers: Record<string, string> = {
      deprecation: `@${Math.floor(d.since.getTime() / 1000)}`,
      sunset: d.sunset.toUTCString(),
      ...(d.link ? { link: `<${d.link}>; rel="deprecation"` } : {}),
    };
    const announce: onSendHookHandler = (_req, reply, payload, done) => {
      reply.headers(headers);
      done(null, payload);
    };
    const existing = route.onSend;
    route.onSend = existing ? [...(Array.isArray(existing) ? existing : [existing]), announce] : [announce];
  });
}
