import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../../errors/codes';
import { verifyScreenedRequest } from '../../signing/request-signature';
import { admissionHook } from './admission-step';
import { takeToken } from './operator-rate-limit';
import { refuseSigned, replayRecordOf, seenUntil, signatureRecord } from './replay-records';
import { unavailableOnFailure } from './shared-state-failure';
import { type AuthDeps, header, renameHeaders, type Surface } from './surface';

/**
 * Authenticates a request once its body is in (HMAC over the raw bytes, operator status), spends
 * one token of the operator's rate-limit bucket, and refuses a state-changing request whose
 * signature was already accepted (see `replay` on the route config). Runs before schema
 * validation, so an unauthenticated caller learns nothing about the request's shape.
 */
export function authenticator(surface: Surface, deps: AuthDeps) {
  return admissionHook(authenticateRequest, surface, deps);
}

function authenticateRequest(
  surface: Surface,
  deps: AuthDeps,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<void> | undefined {
  const operator = req.authCandidate;
  if (!operator) throw new DomainError('MISSING_CREDENTIALS', `the ${surface.headers.apiKey} header is missing`);
  const timestamp = header(req, surface.headers.timestamp)!;
  const signature = header(req, surface.headers.signature)!;
  // The headers' format was checked by the screener; the window is checked again (the body may have
  // taken a while to arrive), then the HMAC.
  const check = verifyScreenedRequest({
    secrets: operator.secrets,
    method: req.method,
    path: req.raw.url ?? req.url,
    timestamp,
    signature,
    body: req.rawBody ?? '',
    now: deps.clock.now(),
    toleranceMs: deps.signatureToleranceMs,
  });
  if (!check.ok) throw new DomainError(check.code, renameHeaders(check.message, surface));
  if (operator.status !== 'active') {
    const disabled = new DomainError('OPERATOR_DISABLED', 'this operator account is disabled');
    return refuseSigned(deps, req, operator, timestamp, signature, disabled);
  }
  // A route that records its signature as seen once claims it before the bucket: bytes replayed by
  // someone who captured them get their 409 without spending the operator's own budget.
  if (replayRecordOf(req) === 'once') {
    const seen = signatureRecord(timestamp, signature);
    return unavailableOnFailure(req, () => deps.seenSignatures.claim(seen, 'once', seenUntil(deps, timestamp))).then(
      (verdict) => {
        if (verdict !== 'first') {
          throw new DomainError(
            'REQUEST_REPLAYED',
            'this signed request was already received; sign each new request afresh (new timestamp)',
          );
        }
        return takeToken(deps, req, reply, operator, timestamp, signature);
      },
    );
  }
  return takeToken(deps, req, reply, operator, timestamp, signature);
}
