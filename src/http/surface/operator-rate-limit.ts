import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BucketLimits, RateDecision } from '../../admission/rate-limit';
import type { OperatorCredentials } from '../../operators/operator';
import { HttpProblem } from './http-problem';
import { refuseSigned, replayRecordOf, signatureRecord } from './replay-records';
import { unavailable, unavailableOnFailure } from './shared-state-failure';
import type { AuthDeps } from './surface';

// Built once per cached credentials object, so a request does not allocate its operator's limits.
const operatorLimits = new WeakMap<OperatorCredentials, BucketLimits>();

function bucketLimits(operator: OperatorCredentials, defaults: BucketLimits): BucketLimits {
  const configured = operator.settings.rate_limit;
  if (!configured) return defaults;
  let limits = operatorLimits.get(operator);
  if (limits === undefined) {
    limits = { refillPerSecond: configured.refill_per_second, burst: configured.burst };
    operatorLimits.set(operator, limits);
  }
  return limits;
}

/**
 * Spends one token of the operator's bucket. The in-process bucket answers synchronously and the
 * shared one with a promise; either way the answer sets the RateLimit headers, and an authenticated
 * request that is over its budget is refused with its signature recorded.
 */
export function takeToken(
  deps: AuthDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  operator: OperatorCredentials,
  timestamp: string,
  signature: string,
): Promise<void> | undefined {
  const limits = bucketLimits(operator, deps.defaultRateLimit);
  let decision: RateDecision | Promise<RateDecision>;
  try {
    decision = deps.limiter.take(operator.id, limits);
  } catch (err) {
    throw unavailable(req, err);
  }
  if (decision instanceof Promise) {
    return unavailableOnFailure(req, () => decision).then((settled) =>
      applyDecision(deps, req, reply, operator, limits, settled, timestamp, signature),
    );
  }
  return applyDecision(deps, req, reply, operator, limits, decision, timestamp, signature);
}

function applyDecision(
  deps: AuthDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  operator: OperatorCredentials,
  limits: BucketLimits,
  decision: RateDecision,
  timestamp: string,
  signature: string,
): Promise<void> | undefined {
  reply.header('ratelimit-limit', String(decision.limit));
  reply.header('ratelimit-reset', String(decision.resetSeconds));
  const record = replayRecordOf(req);
  if (!decision.allowed) {
    reply.header('ratelimit-remaining', '0');
    const message = `rate limit exceeded: ${limits.burst} burst, ${limits.refillPerSecond} requests per second`;
    const limited = new HttpProblem('RATE_LIMITED', message, { 'retry-after': String(decision.retryAfterSeconds) });
    // A seen-once signature was claimed before the bucket: the refusal already leaves it spent.
    if (record === 'once') return Promise.reject(limited);
    return refuseSigned(deps, req, operator, timestamp, signature, limited);
  }
  reply.header('ratelimit-remaining', String(decision.remaining));
  if (record === 'on-key') req.signatureRecord = signatureRecord(timestamp, signature);
  req.operator = operator;
  return undefined;
}
