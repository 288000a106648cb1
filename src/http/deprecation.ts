import type { FastifyInstance } from 'fastify';

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
  app.addHook('onSend', async (req, reply) => {
    const d = req.routeOptions.config?.deprecation;
    if (!d) return;
    reply.header('deprecation', `@${Math.floor(d.since.getTime() / 1000)}`);
    reply.header('sunset', d.sunset.toUTCString());
    if (d.link) reply.header('link', `<${d.link}>; rel="deprecation"`);
  });
}
