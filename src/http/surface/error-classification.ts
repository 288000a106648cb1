import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorCode, isDomainError } from '../../errors/codes';
import { StoreUnavailableError } from '../../errors/unavailable';
import { HttpProblem } from './http-problem';
import type { Surface } from './surface';
import { describeValidation, type ValidationIssue } from './validation-wording';

interface ClassifiedError {
  code: ErrorCode;
  message: string;
  headers: Record<string, string>;
}

/** Translates anything thrown in a surface into that surface's error body and status. */
export function errorHandler(surface: Surface) {
  return (error: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): void => {
    const { code, message, headers } = classify(error);
    const status = surface.status[code];
    if (status >= 500) req.log.error({ err: error }, 'request failed');
    for (const [name, value] of Object.entries(headers)) reply.header(name, value);
    // A 503's message is ours (what to do: retry); any other 5xx says nothing about the fault.
    const safeMessage = status >= 500 && code !== 'SERVICE_UNAVAILABLE' ? 'internal error' : message;
    void reply.status(status).send(surface.errorBody(code, safeMessage, String(req.id)));
  };
}

const STORE_UNAVAILABLE = {
  code: 'SERVICE_UNAVAILABLE',
  message: 'the service cannot reach its store right now; retry shortly',
} as const;

function classify(error: FastifyError | Error): ClassifiedError {
  if (error instanceof HttpProblem) return { code: error.code, message: error.message, headers: error.headers };
  if (isDomainError(error)) return { code: error.code, message: error.message, headers: {} };
  // An outage, not a fault: the caller retries (a money call with the same idempotency key, which is safe
  // whether or not the call reached the store before the connection went).
  if (error instanceof StoreUnavailableError) return { ...STORE_UNAVAILABLE, headers: { 'retry-after': '1' } };
  const fastifyError = error as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
  if (fastifyError.validation && fastifyError.validation.length > 0)
    return { ...describeValidation(fastifyError.validation, fastifyError.validationContext ?? 'body'), headers: {} };
  switch (fastifyError.code) {
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
  if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return { code: 'VALIDATION_FAILED', message: fastifyError.message, headers: {} };
  }
  return { code: 'INTERNAL', message: 'internal error', headers: {} };
}
