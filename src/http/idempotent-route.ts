import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IdempotencyService } from '../idempotency/idempotency';
import type { Surface } from './surface';

type Effect = Parameters<IdempotencyService['execute']>[2];

/**
 * The one way a route runs a monetary write exactly once (both surfaces): the effect runs in the
 * idempotency layer's transaction under the caller's key; a repeat with the same key and body gets
 * the stored response back byte for byte, marked `idempotent-replay: true`. Domain refusals are
 * stored in the surface's own error shape, so a replayed refusal reads like the first one.
 */
export async function replyIdempotently(
  idempotency: IdempotencyService,
  surface: Surface,
  req: FastifyRequest,
  reply: FastifyReply,
  request: {
    key: string;
    route: string;
    body: unknown;
    /** The accepted signature, recorded on the key row (routes whose key travels in a header). */
    signature?: string;
  },
  effect: Effect,
  // Runs once the effect has committed, never for a replay or a refusal (its in-memory changes
  // must not outrun the store: the transaction may still roll back after the effect returns).
  committed?: () => void,
): Promise<never> {
  const result = await idempotency.execute(
    { operatorId: req.operator!.id, ...request },
    (error) => ({
      statusCode: surface.status[error.code],
      body: surface.errorBody(error.code, error.message, String(req.id)),
    }),
    effect,
  );
  if (result.replayed) reply.header('idempotent-replay', 'true');
  else if (result.statusCode === 200) committed?.();
  // The stored response is replayed byte-for-byte; its shape was checked when it was first sent.
  return reply.status(result.statusCode).send(result.body) as never;
}
