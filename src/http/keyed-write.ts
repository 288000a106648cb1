import { withHeadersOn, withResponseHeaders } from './openapi';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../errors/codes';
import type { IdempotencyService, WriteTransaction } from '../idempotency/idempotency';
import type { Surface } from './surface/surface';

/**
 * A POST that is not a bet command (webhook endpoints, sandbox scripts and settings), run under the
 * request's Idempotency-Key when it has one: the same key and body again get the first answer with
 * `idempotent-replay: true` and change nothing; the same key with another body gets 409
 * IDEMPOTENCY_KEY_REUSED. Without the header the write runs as it is. The key covers the route, its
 * path parameters and the body, so one key on two endpoints' rotate-secret is a conflict, not a replay.
 *
 * These routes keep the once-only signature rule (a retry is signed afresh, with a new timestamp), so
 * captured bytes replayed as they are never fetch a stored answer, which may hold an endpoint secret.
 */
export async function keyedPost<T>(
  req: FastifyRequest,
  reply: FastifyReply,
  deps: { idempotency: IdempotencyService; surface: Surface },
  write: { status: number; sealed?: boolean },
  call: (inTx?: WriteTransaction) => Promise<T>,
  present: (result: T) => unknown = (result) => result,
): Promise<FastifyReply> {
  const key = idempotencyKeyOf(req);
  if (key === undefined) return reply.status(write.status).send(present(await call()));
  const { surface } = deps;
  const result = await deps.idempotency.keyedWrite(
    {
      operatorId: req.operator!.id,
      key,
      route: `${req.method} ${req.routeOptions.url}`,
      body: { params: req.params ?? null, body: req.body ?? null },
    },
    call,
    (answer) => ({ statusCode: write.status, body: present(answer) }),
    refusalIn(surface, req),
    { sealed: write.sealed === true },
  );
  return sendAnswer(reply, result);
}

/** A refusal in the surface's error format, as the idempotency key stores it and the route answers it. */
export function refusalIn(
  surface: Surface,
  req: FastifyRequest,
): (error: DomainError) => { statusCode: number; body: Record<string, unknown> } {
  return (error) => ({
    statusCode: surface.status[error.code],
    body: surface.errorBody(error.code, error.message, String(req.id)),
  });
}

/** The header the spec puts on a stored answer sent again for the same key and body. */
export const REPLAY_HEADER = 'idempotent-replay';

/** How an answer replayed from its idempotency key is marked (`idempotent-replay: true`). */
const REPLAY_HEADER_SCHEMA = {
  [REPLAY_HEADER]: {
    type: 'string',
    enum: ['true'],
    description: 'present (true) only when this is the stored answer to an earlier request with the same key and body',
  },
};

/**
 * A keyed route's success schema that also declares the replay header, so the published document (and
 * the clients generated from it) tell integrators how a replay is marked. Built once, when the route is
 * registered; the serializer reads only the body's properties, and @fastify/swagger moves `headers`
 * into the response's header list.
 */
export function replayable<T extends object>(schema: T): T & { headers: Record<string, unknown> } {
  return withResponseHeaders(schema, REPLAY_HEADER_SCHEMA);
}

/**
 * A keyed route's error responses, declaring the replay header on the statuses a stored refusal can have:
 * a refusal made once the key was claimed (betting closed, bet not active, stake out of range, unknown
 * session…) is stored under the key like an answer, and the same key and body get it again marked
 * `idempotent-replay: true`.
 */
export function replayableErrors<T extends Record<number, object>>(errors: T): T {
  return withHeadersOn(errors, [400, 404, 409], REPLAY_HEADER_SCHEMA);
}

/**
 * Answers an idempotent request (a bet command or a keyed write): a stored answer is replayed byte for
 * byte, its shape checked when it was first sent, and marked `idempotent-replay: true`.
 */
export function sendAnswer(
  reply: FastifyReply,
  result: { statusCode: number; body: unknown; replayed: boolean },
): FastifyReply {
  if (result.replayed) reply.header(REPLAY_HEADER, 'true');
  return reply.status(result.statusCode).send(result.body);
}

/**
 * The request's Idempotency-Key, or undefined. Node joins a header sent twice into one value with
 * ", ", which would make a new key out of two; a key given twice is refused instead. The raw headers
 * are only read when the value could be such a join, so the usual request pays one `includes`.
 */
export function idempotencyKeyOf(req: FastifyRequest): string | undefined {
  const key = req.headers['idempotency-key'];
  if (Array.isArray(key)) throw twice();
  if (key === undefined || !key.includes(', ')) return key;
  const raw = req.raw.rawHeaders;
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'idempotency-key') seen++;
  }
  if (seen > 1) throw twice();
  return key;
}

const twice = (): DomainError =>
  new DomainError('VALIDATION_FAILED', 'the Idempotency-Key header is given more than once; send it once');
