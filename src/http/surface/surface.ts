import type { Clock } from '../../clock/clock';
import type { ErrorCode } from '../../errors/codes';
import type { OperatorService } from '../../operators/operators';
import type { AuthFailureLimiter, BucketLimits, OperatorRateLimiter } from '../../admission/rate-limit';
import type { SeenSignatureStore } from '../../admission/replay-guard';
import type { IdempotencyService } from '../../idempotency/idempotency';
import type { FastifyRequest } from 'fastify';

/** What distinguishes the two API surfaces: header names and how an error is written. */
export interface Surface {
  name: 'A' | 'B';
  headers: { apiKey: string; signature: string; timestamp: string };
  status: Record<ErrorCode, number>;
  errorBody(code: ErrorCode, message: string, traceId: string): Record<string, unknown>;
}

/** What the admission hooks (screening, authentication, rate limit, replay records) read and write. */
export interface AuthDeps {
  operators: OperatorService;
  clock: Clock;
  limiter: OperatorRateLimiter;
  signatureToleranceMs: number;
  defaultRateLimit: BucketLimits;
  seenSignatures: SeenSignatureStore;
  authFailures: AuthFailureLimiter;
  bodyLimitBytes: number;
  /** Where a keyed request refused after its signature check leaves its signature (see refuseSigned). */
  refusedSignatures: Pick<IdempotencyService, 'noteRefused'>;
}

export const header = (req: FastifyRequest, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** The signing module words its messages with Surface A's header names; each surface reads its own. */
export function renameHeaders(message: string, surface: Surface): string {
  return message
    .replace(/\bx-timestamp\b/gi, surface.headers.timestamp)
    .replace(/\bx-signature\b/gi, surface.headers.signature);
}
