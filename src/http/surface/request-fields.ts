import type { FastifyInstance } from 'fastify';
import type { OperatorCredentials } from '../../operators/operator';

declare module 'fastify' {
  interface FastifyRequest {
    operator?: OperatorCredentials;
    /**
     * On 'idempotency-key' routes: the accepted signature, which the route hands to the
     * idempotency layer to record on the key row in the command's own transaction.
     */
    signatureRecord?: string;
    /** The operator named by the headers, before the body has been read and the signature checked. */
    authCandidate: OperatorCredentials | null;
  }
  interface FastifyContextConfig {
    /**
     * How a repeat of an accepted signature is judged on a state-changing route:
     * - absent: never legitimate (the call has no idempotency key): refused as REQUEST_REPLAYED;
     * - 'idempotency-key': allowed only with the same Idempotency-Key header (the idempotent retry);
     *   recorded by the idempotency layer on the key row, in the command's transaction (no extra write);
     * - 'signed-body': the idempotency key is inside the signed body, so a repeat is always the same
     *   request under the same key and the idempotency layer replays it; no record needed;
     * - 'no-effect': a POST that only computes an answer (verify-signature): a repeat changes nothing,
     *   so nothing is recorded and the call costs no store write.
     */
    replay?: 'idempotency-key' | 'signed-body' | 'no-effect';
  }
}

/**
 * The request fields authentication fills, declared once on the root instance so every request
 * object has them from the start (one shape for all, instead of properties added mid-request).
 */
export function decorateAuthenticatedRequest(app: FastifyInstance): void {
  app.decorateRequest('authCandidate', null);
  app.decorateRequest('operator', undefined);
  app.decorateRequest('signatureRecord', undefined);
}
