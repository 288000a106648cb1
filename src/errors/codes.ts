/**
 * The one catalogue of stable error codes. Codes are part of the public contract (v1): add, never
 * rename or remove. Each HTTP surface maps every code to a status in a `Record<ErrorCode, number>`,
 * so the compiler refuses a new code until both surfaces say how they present it.
 */
export const ERROR_CODES = [
  // request shape
  'VALIDATION_FAILED',
  'MALFORMED_JSON',
  'DUPLICATE_JSON_KEY',
  'UNKNOWN_FIELD',
  'BODY_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'URI_TOO_LONG',
  'HEADERS_TOO_LARGE',
  'REQUEST_TIMEOUT',
  // authentication
  'MISSING_CREDENTIALS',
  'UNKNOWN_API_KEY',
  'INVALID_SIGNATURE',
  'STALE_TIMESTAMP',
  'OPERATOR_DISABLED',
  // test mode: a sandbox call made with a live key
  'SANDBOX_ONLY',
  'REQUEST_REPLAYED',
  // idempotency
  'IDEMPOTENCY_KEY_MISSING',
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_KEY_IN_FLIGHT',
  // limits
  'RATE_LIMITED',
  // lookups
  'NOT_FOUND',
  'ROUND_NOT_FOUND',
  'BET_NOT_FOUND',
  'SESSION_NOT_FOUND',
  'WEBHOOK_ENDPOINT_NOT_FOUND',
  'DELIVERY_NOT_FOUND',
  // state
  'BETTING_CLOSED',
  'ROUND_NOT_RUNNING',
  'BET_NOT_ACTIVE',
  // A running round whose engine has stopped proving it is alive: no cash-out until it does; if it
  // does not, the round is voided and every open stake refunded.
  'ROUND_INTERRUPTED',
  'ILLEGAL_TRANSITION',
  'SESSION_EXPIRED',
  'WRONG_GAME',
  // money and product rules
  'CURRENCY_NOT_ALLOWED',
  'STAKE_OUT_OF_RANGE',
  'STAKE_PRECISION',
  'INVALID_SELECTION',
  'INVALID_URL',
  'INSUFFICIENT_FUNDS',
  // server
  'SERVICE_UNAVAILABLE',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** A failure the domain expects and the caller can act on. `message` is safe to show to operators. */
export class DomainError extends Error {
  override readonly name = 'DomainError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export const isDomainError = (e: unknown): e is DomainError => e instanceof DomainError;
