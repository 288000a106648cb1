import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../../errors/codes';
import type { OperatorCredentials } from '../../operators/operator';
import { checkSignatureHeaders } from '../../signing/request-signature';
import { admissionHook } from './admission-step';
import { HttpProblem } from './http-problem';
import { type AuthDeps, header, renameHeaders, type Surface } from './surface';

/**
 * First look at a request, from its headers alone (onRequest, before any body byte is read): an
 * address over its failed-authentication budget gets 429, a declared body over the limit gets 413,
 * and the API key and the timestamp window are checked, so nothing unauthenticable is ever parsed.
 */
export function screener(surface: Surface, deps: AuthDeps) {
  return admissionHook(screenHeaders, surface, deps);
}

function screenHeaders(
  surface: Surface,
  deps: AuthDeps,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<void> | undefined {
  const wait = deps.authFailures.retryAfterSeconds(req.ip);
  if (wait > 0) {
    const message = `too many failed authentications from this address; retry in ${wait} s`;
    throw new HttpProblem('RATE_LIMITED', message, { 'retry-after': String(wait) });
  }
  const declared = req.headers['content-length'];
  // The default limit first; a route with a larger limit of its own (verify-signature) is looked up only
  // for a body over the default, so the usual request never builds Fastify's routeOptions object here.
  if (
    declared !== undefined &&
    Number(declared) > deps.bodyLimitBytes &&
    Number(declared) > (req.routeOptions.bodyLimit ?? deps.bodyLimitBytes)
  ) {
    // The body is never read: the connection closes after the answer instead of draining it.
    reply.header('connection', 'close');
    throw new DomainError('BODY_TOO_LARGE', 'the request body is larger than the limit for this endpoint');
  }
  const apiKey = header(req, surface.headers.apiKey);
  if (!apiKey) throw new DomainError('MISSING_CREDENTIALS', `the ${surface.headers.apiKey} header is missing`);
  const cached = deps.operators.cachedByApiKey(apiKey);
  if (cached !== undefined) {
    admitCandidate(surface, deps, req, cached);
    return undefined;
  }
  return deps.operators.byApiKey(apiKey).then((operator) => admitCandidate(surface, deps, req, operator));
}

function admitCandidate(
  surface: Surface,
  deps: AuthDeps,
  req: FastifyRequest,
  operator: OperatorCredentials | null,
): void {
  if (!operator) {
    throw new DomainError('UNKNOWN_API_KEY', `no operator has the API key given in ${surface.headers.apiKey}`);
  }
  const refused = checkSignatureHeaders({
    timestamp: header(req, surface.headers.timestamp),
    signature: header(req, surface.headers.signature),
    now: deps.clock.now(),
    toleranceMs: deps.signatureToleranceMs,
  });
  if (refused) throw new DomainError(refused.code, renameHeaders(refused.message, surface));
  req.authCandidate = operator;
}
