import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { isDomainError, type ErrorCode } from '../../errors/codes';
import type { AuthDeps, Surface } from './surface';

/** Codes that count against the client address's failed-authentication budget. */
const AUTH_FAILURES: ReadonlySet<ErrorCode> = new Set([
  'MISSING_CREDENTIALS',
  'UNKNOWN_API_KEY',
  'INVALID_SIGNATURE',
  'STALE_TIMESTAMP',
  'REQUEST_REPLAYED',
]);

/**
 * One admission check (header screening, authentication). It returns undefined when it finished
 * synchronously, or a promise when it had to wait for shared state.
 */
export type AdmissionStep = (
  surface: Surface,
  deps: AuthDeps,
  req: FastifyRequest,
  reply: FastifyReply,
) => Promise<void> | undefined;

/**
 * A failure that is an authentication failure is counted against the client's address before it is
 * answered; anything else is answered as it is.
 */
function answerFailure(deps: AuthDeps, req: FastifyRequest, error: unknown, done: HookHandlerDoneFunction): void {
  if (!(isDomainError(error) && AUTH_FAILURES.has(error.code))) {
    done(error as Error);
    return;
  }
  deps.authFailures
    .noteFailure(req.ip)
    .catch((err: unknown) => req.log.warn({ err }, 'could not count a failed authentication'))
    .then(() => done(error));
}

/**
 * Runs one admission step as a callback hook, synchronously when the step needs nothing it has to
 * wait for: the two admission hooks are over a quarter of a place-bet's server CPU in its profile,
 * and an async hook would add a promise and a tick to every request.
 */
export function admissionHook(step: AdmissionStep, surface: Surface, deps: AuthDeps) {
  return function runAdmissionStep(req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    let pending: Promise<void> | undefined;
    try {
      pending = step(surface, deps, req, reply);
    } catch (error) {
      answerFailure(deps, req, error, done);
      return;
    }
    if (pending === undefined) done();
    else
      pending.then(
        () => done(),
        (error: unknown) => answerFailure(deps, req, error, done),
      );
  };
}
