/** Errors the client throws. Every one carries what support needs: the code and the trace id. */

export type SurfaceName = 'A' | 'B';

/** The service answered with an error status. */
export class BettingApiError extends Error {
  override readonly name = 'BettingApiError';
  /** The stable error code from the service's catalogue (INVALID_SIGNATURE, BETTING_CLOSED, …). */
  readonly code: string;
  readonly status: number;
  /** The body's trace_id (5xx), else the x-request-id the service answered with: quote it to support. */
  readonly traceId: string | undefined;
  /** The Idempotency-Key (or reserve idempotency_key) the call used: retry later with the same one. */
  readonly idempotencyKey: string | undefined;
  readonly body: unknown;
  readonly surface: SurfaceName;

  constructor(input: {
    surface: SurfaceName;
    status: number;
    body: unknown;
    requestId: string | undefined;
    idempotencyKey: string | undefined;
  }) {
    const { code, message, traceId } = readErrorBody(input.surface, input.status, input.body);
    super(`${input.status} ${code}: ${message}`);
    this.code = code;
    this.status = input.status;
    this.traceId = traceId ?? input.requestId;
    this.idempotencyKey = input.idempotencyKey;
    this.body = input.body;
    this.surface = input.surface;
  }
}

/**
 * No answer at all (connection refused, reset, timed out) after every retry, or the caller's signal
 * ended the call: either way the outcome is unknown, not a failure.
 */
export class BettingNetworkError extends Error {
  override readonly name = 'BettingNetworkError';
  readonly code = 'NETWORK_ERROR';
  readonly traceId = undefined;
  /** The request may have been applied: retry later with this key and it is applied at most once. */
  readonly idempotencyKey: string | undefined;
  readonly attempts: number;
  /** true when the caller's signal ended the call (its `cause` is the signal's reason). */
  readonly aborted: boolean;

  constructor(
    message: string,
    options: { cause: unknown; idempotencyKey: string | undefined; attempts: number; aborted?: boolean },
  ) {
    super(message, { cause: options.cause });
    this.idempotencyKey = options.idempotencyKey;
    this.attempts = options.attempts;
    this.aborted = options.aborted ?? false;
  }
}

/** Surface A writes `{error: <text>, code}`; Surface B writes `{error: <CODE>, message}`; 5xx add trace_id. */
function readErrorBody(
  surface: SurfaceName,
  status: number,
  body: unknown,
): { code: string; message: string; traceId?: string } {
  const fallback = { code: status >= 500 ? 'INTERNAL' : `HTTP_${status}`, message: `the service answered ${status}` };
  if (typeof body !== 'object' || body === null) return fallback;
  const b = body as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const traceId = text(b.trace_id);
  if (surface === 'A') {
    return {
      code: text(b.code) ?? fallback.code,
      message: text(b.error) ?? fallback.message,
      ...(traceId ? { traceId } : {}),
    };
  }
  return {
    code: text(b.error) ?? fallback.code,
    message: text(b.message) ?? text(b.error) ?? fallback.message,
    ...(traceId ? { traceId } : {}),
  };
}
