import type { FastifyRequest } from 'fastify';
import { isDomainError } from '../../errors/codes';
import { HttpProblem } from './http-problem';

/** A shared-state failure (Redis or the store unreachable) is a 503 to retry, not a 500. */
export function unavailable(req: FastifyRequest, err: unknown): unknown {
  if (isDomainError(err)) return err;
  req.log.error({ err }, 'shared request state unavailable');
  const message = 'the service cannot check this request right now; retry shortly';
  return new HttpProblem('SERVICE_UNAVAILABLE', message, { 'retry-after': '1' });
}

export async function unavailableOnFailure<T>(req: FastifyRequest, step: () => T | Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    throw unavailable(req, err);
  }
}
