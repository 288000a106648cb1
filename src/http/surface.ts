import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Clock } from '../clock/clock';
import { DomainError, isDomainError, type ErrorCode } from '../errors/codes';
import { StoreUnavailableError } from '../errors/unavailable';
import type { OperatorCredentials } from '../operators/operator';
import type { OperatorService } from '../operators/operators';
import { checkSignatureHeaders, verifyScreenedRequest } from '../signing/request-signature';
import type { AppServices } from '../services';
import { documentSecurity, SURFACE_SECURITY } from './openapi';
import type { AuthFailureLimiter, BucketLimits, OperatorRateLimiter, RateDecision } from '../admission/rate-limit';
import type { SeenSignatureStore } from '../admission/replay-guard';
import type { IdempotencyService } from '../idempotency/idempotency';

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

/** What distinguishes the two API surfaces: header names and how an error is written. */
export interface Surface {
  name: 'A' | 'B';
  headers: { apiKey: string; signature: string; timestamp: string };
  status: Record<ErrorCode, number>;
  errorBody(code: ErrorCode, message: string, traceId: string): Record<string, unknown>;
}

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

export class HttpProblem extends DomainError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(code, message);
  }
}

const header = (req: FastifyRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** Codes that count against the client address's failed-authentication budget. */
const AUTH_FAILURES: ReadonlySet<ErrorCode> = new Set([
  'MISSING_CREDENTIALS',
  'UNKNOWN_API_KEY',
  'INVALID_SIGNATURE',
  'STALE_TIMESTAMP',
  'REQUEST_REPLAYED',
]);
const READS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
const SEEN_HEX_LENGTH = 32;

/**
 * The request fields authentication fills, declared once on the root instance so every request
 * object has them from the start (one shape for all, instead of properties added mid-request).
 */
export function decorateAuthenticatedRequest(app: FastifyInstance): void {
  app.decorateRequest('authCandidate', null);
  app.decorateRequest('operator', undefined);
  app.decorateRequest('signatureRecord', undefined);
}

/**
 * A failure that is an authentication failure is counted against the client's address before it is
 * answered; anything else is answered as it is.
 */
function failed(deps: AuthDeps, req: FastifyRequest, error: unknown, done: HookHandlerDoneFunction): void {
  if (!(isDomainError(error) && AUTH_FAILURES.has(error.code))) {
    done(error as Error);
    return;
  }
  deps.authFailures
    .noteFailure(req.ip)
    .catch((err: unknown) => req.log.warn({ err }, 'could not count a failed authentication'))
    .then(() => done(error));
}

type AuthStep = (
  surface: Surface,
  deps: AuthDeps,
  req: FastifyRequest,
  reply: FastifyReply,
) => Promise<void> | undefined;

/**
 * Runs one authentication step as a hook: synchronously when the step needs nothing it has to wait
 * for (no promise on the hot path), and an authentication failure is counted before it is answered.
 */
function runStep(
  step: AuthStep,
  surface: Surface,
  deps: AuthDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  let pending: Promise<void> | undefined;
  try {
    pending = step(surface, deps, req, reply);
  } catch (error) {
    failed(deps, req, error, done);
    return;
  }
  if (pending === undefined) done();
  else
    pending.then(
      () => done(),
      (error: unknown) => failed(deps, req, error, done),
    );
}

/**
 * First look at a request, from its headers alone (onRequest, before any body byte is read): an
 * address over its failed-authentication budget gets 429, a declared body over the limit gets 413,
 * and the API key and the timestamp window are checked, so nothing unauthenticable is ever parsed.
 *
 * The hooks are plain callbacks that run synchronously as far as they can (a cached operator, the
 * in-process bucket): on the hot path no promise and no closure is made, and the request goes on
 * in the same tick.
 */
export function screener(surface: Surface, deps: AuthDeps) {
  return function screen(req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    runStep(screenHeaders, surface, deps, req, reply, done);
  };
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
    admit(surface, deps, req, cached);
    return undefined;
  }
  return deps.operators.byApiKey(apiKey).then((operator) => admit(surface, deps, req, operator));
}

function admit(surface: Surface, deps: AuthDeps, req: FastifyRequest, operator: OperatorCredentials | null): void {
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

/**
 * Authenticates a request once its body is in (HMAC over the raw bytes, operator status), spends
 * one token of the operator's rate-limit bucket, and refuses a state-changing request whose
 * signature was already accepted (see `replay` on the route config). Runs before schema
 * validation, so an unauthenticated caller learns nothing about the request's shape.
 */
export function authenticator(surface: Surface, deps: AuthDeps) {
  return function authenticate(req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    runStep(authenticateRequest, surface, deps, req, reply, done);
  };
}

// An operator's bucket size, built once per cached credentials object rather than per request.
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

function takeToken(
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
    return unavailableOnFailure(req, () => decision).then((d) =>
      afterBucket(deps, req, reply, operator, limits, d, timestamp, signature),
    );
  }
  return afterBucket(deps, req, reply, operator, limits, decision, timestamp, signature);
}

function afterBucket(
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

/**
 * How a request's accepted signature is kept against replays (see `replay` on the route config):
 * not at all (reads, a key inside the signed body, a POST that only computes), on its idempotency
 * key's row, or as seen once.
 */
function replayRecordOf(req: FastifyRequest): 'none' | 'on-key' | 'once' {
  if (READS.has(req.method)) return 'none';
  const mode = req.routeOptions.config?.replay;
  if (mode === 'signed-body' || mode === 'no-effect') return 'none';
  return mode === 'idempotency-key' ? 'on-key' : 'once';
}

/**
 * The record of a signature: the signed timestamp, then the signature's first 128 bits, lowercased
 * (the signature is compared as bytes, so its hex case must not make a new entry). Two different
 * requests share it with odds of 2^-128. Leading with the timestamp (near-monotonic within the
 * window) makes each insert land at the end of the index instead of on a random page.
 */
function signatureRecord(timestamp: string, signature: string): string {
  return `${timestamp.padStart(15, '0')}.${signature.slice(0, SEEN_HEX_LENGTH).toLowerCase()}`;
}

/** Kept a little past the window so instances whose clocks differ slightly still agree. */
function seenUntil(deps: AuthDeps, timestamp: string): number {
  return Number(timestamp) + deps.signatureToleranceMs + 60_000;
}

/**
 * Refuses a request whose signature was already checked (rate limited, operator disabled). The
 * bytes of a refused state-changing request must not be taken later: captured and sent again under
 * another Idempotency-Key, or once the bucket has refilled, they would do what the operator's own
 * retry does, a second time. A keyed route records the signature with the key it carried (the same
 * bytes under that key may still claim it: a resend after the 429); a route without a key marks it
 * seen. Recording is best effort: a store that fails it does not change the answer.
 */
function refuseSigned(
  deps: AuthDeps,
  req: FastifyRequest,
  operator: OperatorCredentials,
  timestamp: string,
  signature: string,
  refusal: Error,
): Promise<void> {
  const record = replayRecordOf(req);
  if (record === 'none') return Promise.reject(refusal);
  const seen = signatureRecord(timestamp, signature);
  const key = req.headers['idempotency-key'];
  const recorded =
    record === 'on-key'
      ? deps.refusedSignatures.noteRefused(operator.id, typeof key === 'string' ? key : '', seen)
      : deps.seenSignatures.claim(seen, 'once', seenUntil(deps, timestamp));
  return recorded.then(
    () => Promise.reject(refusal),
    (err: unknown) => {
      req.log.warn({ err }, "could not record a refused request's signature");
      return Promise.reject(refusal);
    },
  );
}

/** A shared-state failure (Redis or the store unreachable) is a 503 to retry, not a 500. */
function unavailable(req: FastifyRequest, err: unknown): unknown {
  if (isDomainError(err)) return err;
  req.log.error({ err }, 'shared request state unavailable');
  const message = 'the service cannot check this request right now; retry shortly';
  return new HttpProblem('SERVICE_UNAVAILABLE', message, { 'retry-after': '1' });
}

async function unavailableOnFailure<T>(req: FastifyRequest, step: () => T | Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    throw unavailable(req, err);
  }
}

function renameHeaders(message: string, surface: Surface): string {
  return message
    .replace(/\bx-timestamp\b/gi, surface.headers.timestamp)
    .replace(/\bx-signature\b/gi, surface.headers.signature);
}

/** Translates anything thrown in a surface into that surface's error body and status. */
export function errorHandler(surface: Surface) {
  return (error: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): void => {
    const { code, message, headers } = classify(error);
    const status = surface.status[code];
    if (status >= 500) req.log.error({ err: error }, 'request failed');
    for (const [k, v] of Object.entries(headers)) reply.header(k, v);
    // A 503's message is ours (what to do: retry); any other 5xx says nothing about the fault.
    const safeMessage = status >= 500 && code !== 'SERVICE_UNAVAILABLE' ? 'internal error' : message;
    void reply.status(status).send(surface.errorBody(code, safeMessage, String(req.id)));
  };
}

const STORE_UNAVAILABLE = {
  code: 'SERVICE_UNAVAILABLE',
  message: 'the service cannot reach its store right now; retry shortly',
} as const;

function classify(error: FastifyError | Error): { code: ErrorCode; message: string; headers: Record<string, string> } {
  if (error instanceof HttpProblem) return { code: error.code, message: error.message, headers: error.headers };
  if (isDomainError(error)) return { code: error.code, message: error.message, headers: {} };
  // An outage, not a fault: the caller retries (a money call with the same idempotency key, which is safe
  // whether or not the call reached the store before the connection went).
  if (error instanceof StoreUnavailableError) return { ...STORE_UNAVAILABLE, headers: { 'retry-after': '1' } };
  const fe = error as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
  if (fe.validation && fe.validation.length > 0)
    return { ...describeValidation(fe.validation, fe.validationContext ?? 'body'), headers: {} };
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        code: 'BODY_TOO_LARGE',
        message: 'the request body is larger than the limit for this endpoint',
        headers: {},
      };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        code: 'UNSUPPORTED_MEDIA_TYPE',
        message: 'send the body as Content-Type: application/json',
        headers: {},
      };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'MALFORMED_JSON', message: 'the request body is empty; send a JSON object', headers: {} };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { code: 'MALFORMED_JSON', message: 'Content-Length does not match the body', headers: {} };
    default:
      break;
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { code: 'VALIDATION_FAILED', message: fe.message, headers: {} };
  }
  return { code: 'INTERNAL', message: 'internal error', headers: {} };
}

interface ValidationIssue {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
  parentSchema?: { description?: string };
}

/**
 * Fields (`context:name`) whose absence has its own code. The schema marks them required (so the published
 * document and generated clients say so), and a request without one gets the code integrators
 * handle for it rather than a generic validation failure.
 */
const MISSING_FIELD_CODES: Partial<Record<string, { code: ErrorCode; message: string }>> = {
  'body:idempotency_key': {
    code: 'IDEMPOTENCY_KEY_MISSING',
    message: 'field "idempotency_key" is required: reserve is a monetary write',
  },
  'headers:idempotency-key': {
    code: 'IDEMPOTENCY_KEY_MISSING',
    message: 'the Idempotency-Key header is required on this POST',
  },
};

/** "one of a, b": the literals a union at the issue's path allows, when its schema gives no description. */
function allowedLiterals(issues: ValidationIssue[], issue: ValidationIssue): string | null {
  if (issue.keyword !== 'anyOf' && issue.keyword !== 'const') return null;
  const values = issues
    .filter((i) => i.keyword === 'const' && i.instancePath === issue.instancePath)
    .map((i) => String(i.params.allowedValue));
  return values.length > 0 ? `one of ${values.join(', ')}` : null;
}

/** Turns the first schema violation into a sentence that names the field and what it must be. */
export function describeValidation(issues: ValidationIssue[], context: string): { code: ErrorCode; message: string } {
  // A value outside a union of literals fails each literal ("must be equal to constant") before the
  // union itself: the union's issue is the one whose schema says what the field may be.
  const issue =
    issues.find((i) => i.keyword === 'additionalProperties') ??
    issues.find((i) => i.keyword === 'required') ??
    issues.find((i) => i.keyword === 'anyOf' && i.instancePath === issues[0]!.instancePath) ??
    issues[0]!;
  const path = issue.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const where = context === 'body' ? '' : `${context} `;
  if (issue.keyword === 'additionalProperties') {
    const extra = String(issue.params.additionalProperty);
    const field = path ? `${path}.${extra}` : extra;
    return { code: 'UNKNOWN_FIELD', message: `unknown ${where}field "${field}": this endpoint does not accept it` };
  }
  if (issue.keyword === 'required') {
    const missing = String(issue.params.missingProperty);
    const field = path ? `${path}.${missing}` : missing;
    const special = path ? undefined : MISSING_FIELD_CODES[`${context}:${missing}`];
    if (special) return special;
    return { code: 'VALIDATION_FAILED', message: `${where}field "${field}" is required` };
  }
  const field = path || (context === 'body' ? 'body' : context);
  const rule = issue.parentSchema?.description ?? allowedLiterals(issues, issue) ?? issue.message ?? 'is invalid';
  if (issue.keyword === 'type' && !path && context === 'body') {
    return { code: 'VALIDATION_FAILED', message: 'the body must be a JSON object' };
  }
  return {
    code: 'VALIDATION_FAILED',
    message: `${where}field "${field}" ${rule.startsWith('must') ? rule : `must be ${rule}`}`,
  };
}

/**
 * Puts a route module behind a surface: its authentication and rate limit, its error format, and
 * (for the module that owns the prefix) its 404 body. Every authenticated module calls this.
 */
export function guardSurface(
  app: FastifyInstance,
  surface: Surface,
  s: Pick<
    AppServices,
    'operators' | 'clock' | 'limiter' | 'config' | 'seenSignatures' | 'authFailures' | 'idempotency'
  >,
  options: { ownsNotFound?: boolean } = {},
): void {
  const deps: AuthDeps = {
    operators: s.operators,
    clock: s.clock,
    limiter: s.limiter,
    signatureToleranceMs: s.config.signatureToleranceMs,
    defaultRateLimit: s.config.rateLimit,
    seenSignatures: s.seenSignatures,
    authFailures: s.authFailures,
    bodyLimitBytes: s.config.bodyLimitBytes,
    refusedSignatures: s.idempotency,
  };
  app.addHook('onRequest', screener(surface, deps));
  app.addHook('preValidation', authenticator(surface, deps));
  app.setErrorHandler(errorHandler(surface));
  documentSecurity(app, SURFACE_SECURITY[surface.name]);
  if (options.ownsNotFound) {
    app.setNotFoundHandler((req, reply) => {
      void reply
        .status(404)
        .send(surface.errorBody('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`, String(req.id)));
    });
  }
}
