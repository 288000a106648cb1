import type { ErrorCode } from '../errors/codes';

/**
 * How each surface presents every domain error. `Record<ErrorCode, …>` makes these exhaustive: a
 * code added to the catalogue does not compile until both surfaces say which status it gets.
 */
export const SURFACE_A_STATUS: Record<ErrorCode, number> = {
  VALIDATION_FAILED: 400,
  MALFORMED_JSON: 400,
  DUPLICATE_JSON_KEY: 400,
  UNKNOWN_FIELD: 400,
  BODY_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  URI_TOO_LONG: 414,
  HEADERS_TOO_LARGE: 431,
  REQUEST_TIMEOUT: 408,
  MISSING_CREDENTIALS: 401,
  UNKNOWN_API_KEY: 401,
  INVALID_SIGNATURE: 401,
  STALE_TIMESTAMP: 401,
  OPERATOR_DISABLED: 403,
  SANDBOX_ONLY: 403,
  // A signed request sent again under another Idempotency-Key (or again at all, where the route
  // has none): a conflict with the request already accepted, whatever the caller's intent.
  REQUEST_REPLAYED: 409,
  IDEMPOTENCY_KEY_MISSING: 400,
  IDEMPOTENCY_KEY_REUSED: 409,
  IDEMPOTENCY_KEY_IN_FLIGHT: 409,
  RATE_LIMITED: 429,
  NOT_FOUND: 404,
  ROUND_NOT_FOUND: 404,
  BET_NOT_FOUND: 404,
  SESSION_NOT_FOUND: 404,
  WEBHOOK_ENDPOINT_NOT_FOUND: 404,
  DELIVERY_NOT_FOUND: 404,
  BETTING_CLOSED: 409,
  ROUND_NOT_RUNNING: 409,
  BET_NOT_ACTIVE: 409,
  ROUND_INTERRUPTED: 409,
  ILLEGAL_TRANSITION: 409,
  SESSION_EXPIRED: 401,
  WRONG_GAME: 409,
  CURRENCY_NOT_ALLOWED: 400,
  STAKE_OUT_OF_RANGE: 400,
  STAKE_PRECISION: 400,
  INVALID_SELECTION: 400,
  INVALID_URL: 400,
  INSUFFICIENT_FUNDS: 409,
  SERVICE_UNAVAILABLE: 503,
  INTERNAL: 500,
};

export const SURFACE_B_STATUS: Record<ErrorCode, number> = {
  ...SURFACE_A_STATUS,
  // Surface B integrators expect an expired player session to be a conflict with the session's
  // state rather than a failure of their own (valid) operator credentials.
  SESSION_EXPIRED: 409,
};
