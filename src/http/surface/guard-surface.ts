import type { FastifyInstance } from 'fastify';
import type { AppServices } from '../../services';
import { documentSecurity, SURFACE_SECURITY } from '../openapi';
import { errorHandler } from './error-classification';
import { screener } from './header-screening';
import { authenticator } from './hmac-authentication';
import { notFoundHandler } from './not-found';
import type { AuthDeps, Surface } from './surface';

/**
 * Puts a route module behind a surface: its authentication and rate limit, its error format, and
 * (for the module that owns the prefix) its 404 body. Every authenticated module calls this.
 */
export function guardSurface(
  app: FastifyInstance,
  surface: Surface,
  services: Pick<
    AppServices,
    'operators' | 'clock' | 'limiter' | 'config' | 'seenSignatures' | 'authFailures' | 'idempotency'
  >,
  options: { ownsNotFound?: boolean } = {},
): void {
  const deps: AuthDeps = {
    operators: services.operators,
    clock: services.clock,
    limiter: services.limiter,
    signatureToleranceMs: services.config.signatureToleranceMs,
    defaultRateLimit: services.config.rateLimit,
    seenSignatures: services.seenSignatures,
    authFailures: services.authFailures,
    bodyLimitBytes: services.config.bodyLimitBytes,
    refusedSignatures: services.idempotency,
  };
  app.addHook('onRequest', screener(surface, deps));
  app.addHook('preValidation', authenticator(surface, deps));
  app.setErrorHandler(errorHandler(surface));
  documentSecurity(app, SURFACE_SECURITY[surface.name]);
  if (options.ownsNotFound) app.setNotFoundHandler(notFoundHandler(surface));
}
