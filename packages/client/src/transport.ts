import { randomId } from './crypto.js';
import { BettingApiError, BettingNetworkError, type SurfaceName } from './errors.js';
import { signRequest } from './signing.js';

export interface RetryOptions {
  /** Attempts in all, the first included (default 4). 1 turns retries off. */
  maxAttempts?: number;
  /** First backoff step; each retry doubles it, jittered (default 200 ms). */
  baseDelayMs?: number;
  /** Longest wait between attempts, Retry-After included (default 10 s). */
  maxDelayMs?: number;
}

export interface ClientOptions {
  /** The service's base URL, e.g. https://bets.example.com (no /api/public/v1 or /v1). */
  baseUrl: string;
  apiKey: string;
  apiSecret: string;
  retry?: RetryOptions;
  /** Per attempt (default 10 s). */
  timeoutMs?: number;
  /** Another fetch (a test double, an instrumented one); defaults to globalThis.fetch. */
  fetch?: typeof fetch;
  /** Milliseconds since epoch for X-Timestamp; defaults to Date.now. */
  now?: () => number;
}

export interface CallOptions {
  /** Reuse a key from an earlier attempt (e.g. after a BettingNetworkError) so the write applies once. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface ApiResponse<T> {
  data: T;
  status: number;
  /** true when the service replayed a stored answer for this idempotency key. */
  replayed: boolean;
  requestId: string | undefined;
}

export interface TransportRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Path from the service root, with its query string. */
  path: string;
  body?: unknown;
  /** Which key the write carries, if any: the Idempotency-Key header (Surface A POSTs) or none. */
  idempotencyKey?: string;
  /**
   * Whether a retry after no answer or a 5xx is safe: true for reads, keyed writes and writes that
   * are naturally repeatable; false for creating things without a key (a retry could create two).
   */
  retrySafe: boolean;
  /**
   * A DELETE: a 404 on a retry after an attempt that may have applied means that attempt removed it,
   * which is what the caller asked for (a first attempt's 404 still means there was nothing).
   */
  goneMeansDone?: boolean;
  signal?: AbortSignal;
}

const HEADERS: Record<SurfaceName, { key: string; timestamp: string; signature: string }> = {
  A: { key: 'x-api-key', timestamp: 'x-timestamp', signature: 'x-signature' },
  B: { key: 'X-Operator-Key', timestamp: 'X-Timestamp', signature: 'X-Signature' },
};

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

/** Retry-After in seconds or as an HTTP date, in ms; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Signs, sends, retries. One instance per surface; cheap to create. */
export class Transport {
  private readonly fetchImpl: typeof fetch;
  private readonly now: () => number;
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly timeoutMs: number;
  private readonly baseUrl: string;

  constructor(
    readonly surface: SurfaceName,
    private readonly options: ClientOptions,
  ) {
    if (!options.baseUrl) throw new TypeError('baseUrl is required');
    if (!options.apiKey || !options.apiSecret) throw new TypeError('apiKey and apiSecret are required');
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') throw new TypeError('no fetch in this runtime: pass options.fetch');
    this.fetchImpl = f.bind(globalThis);
    this.now = options.now ?? Date.now;
    this.maxAttempts = Math.max(1, options.retry?.maxAttempts ?? 4);
    this.baseDelayMs = options.retry?.baseDelayMs ?? 200;
    this.maxDelayMs = options.retry?.maxDelayMs ?? 10_000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
  }

  async send<T>(req: TransportRequest): Promise<ApiResponse<T>> {
    // Cancelled before anything was sent: nothing can have been applied, so the reason is the answer.
    if (req.signal?.aborted) throw req.signal.reason;
    // The body is serialised once: every attempt sends (and signs) the very same bytes, so a retry
    // of a keyed write is recognised by the service as the same request.
    const raw = req.body === undefined ? '' : JSON.stringify(req.body);
    const url = new URL(this.baseUrl + req.path);
    const signedPath = url.pathname + url.search;
    const idempotencyKey = req.idempotencyKey ?? keyInBody(req.body);
    // Whether an earlier attempt may have been applied (sent, then no answer or a 5xx).
    let mayHaveApplied = false;
    let lastTimestamp = 0;
    for (let attempt = 1; ; attempt++) {
      // Whole milliseconds (the service refuses a fraction), and later than the attempt before: a
      // retry signed in the same millisecond would carry the same signature, which the service
      // refuses as a replay on writes without an Idempotency-Key (PATCH, DELETE).
      lastTimestamp = Math.max(Math.floor(this.now()), lastTimestamp + 1);
      const timestamp = String(lastTimestamp);
      const names = HEADERS[this.surface];
      const headers: Record<string, string> = {
        [names.key]: this.options.apiKey,
        [names.timestamp]: timestamp,
        [names.signature]: await signRequest({
          secret: this.options.apiSecret,
          method: req.method,
          path: signedPath,
          timestamp,
          body: raw,
        }),
        accept: 'application/json',
      };
      if (raw) headers['content-type'] = 'application/json';
      if (req.idempotencyKey !== undefined) headers['idempotency-key'] = req.idempotencyKey;

      let response: Response;
      let text: string;
      try {
        const timeout = AbortSignal.timeout(this.timeoutMs);
        response = await this.fetchImpl(url, {
          method: req.method,
          headers,
          body: raw || undefined,
          signal: req.signal ? AbortSignal.any([req.signal, timeout]) : timeout,
          redirect: 'manual',
        });
        // A connection cut while the answer streams in is no answer either.
        text = await response.text();
      } catch (error) {
        // The caller's own deadline or cancel: the request may have reached the service and been
        // applied, so the outcome is as unknown as after a timeout, and the caller needs the key
        // this call used to settle it (retry under it) rather than a bare AbortError.
        if (req.signal?.aborted) throw this.aborted(req, signedPath, attempt, idempotencyKey);
        if (!req.retrySafe || attempt >= this.maxAttempts) {
          throw new BettingNetworkError(
            `${req.method} ${signedPath}: no answer after ${attempt} attempt(s): ${describe(error)}`,
            { cause: error, idempotencyKey, attempts: attempt },
          );
        }
        mayHaveApplied = true;
        await this.pause(this.backoff(attempt), req, signedPath, attempt, idempotencyKey);
        continue;
      }

      const data = parse(text);
      const requestId = response.headers.get('x-request-id') ?? undefined;
      if (response.ok) {
        return {
          data: data as T,
          status: response.status,
          replayed: response.headers.get('idempotent-replay') === 'true',
          requestId,
        };
      }
      if (response.status === 404 && req.goneMeansDone && mayHaveApplied) {
        return { data: undefined as T, status: response.status, replayed: false, requestId };
      }
      const error = new BettingApiError({
        surface: this.surface,
        status: response.status,
        body: data,
        requestId,
        idempotencyKey,
      });
      // 429 was refused before anything ran, so it is always safe to repeat; a 5xx is repeated
      // only where a repeat cannot apply the request twice. IDEMPOTENCY_KEY_IN_FLIGHT says an
      // earlier attempt under this key (one whose answer was lost, on another instance) is still
      // running: it is neither a refusal nor a conflict, and asking again under the same key gets
      // its answer once it is stored.
      const inFlight =
        response.status === 409 && error.code === 'IDEMPOTENCY_KEY_IN_FLIGHT' && idempotencyKey !== undefined;
      const retryable = response.status === 429 || inFlight || (response.status >= 500 && req.retrySafe);
      if (!retryable || attempt >= this.maxAttempts) throw error;
      if (response.status >= 500) mayHaveApplied = true;
      const hinted = retryAfterMs(response.headers.get('retry-after'), this.now());
      const wait = hinted === null ? this.backoff(attempt) : Math.min(hinted, this.maxDelayMs);
      await this.pause(wait, req, signedPath, attempt, idempotencyKey);
    }
  }

  /** Waits before the next attempt; the caller's signal ends the wait as an unknown outcome. */
  private async pause(
    ms: number,
    req: TransportRequest,
    signedPath: string,
    attempt: number,
    idempotencyKey: string | undefined,
  ): Promise<void> {
    try {
      await sleep(ms, req.signal);
    } catch (error) {
      if (req.signal?.aborted) throw this.aborted(req, signedPath, attempt, idempotencyKey);
      throw error;
    }
  }

  private aborted(
    req: TransportRequest,
    signedPath: string,
    attempts: number,
    idempotencyKey: string | undefined,
  ): BettingNetworkError {
    const reason: unknown = req.signal?.reason;
    return new BettingNetworkError(
      `${req.method} ${signedPath}: aborted by the caller after ${attempts} attempt(s), outcome unknown: ` +
        describe(reason),
      { cause: reason, idempotencyKey, attempts, aborted: true },
    );
  }

  /** Exponential backoff, jittered over its upper half: spreads a crowd of clients retrying after one outage. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }
}

function parse(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function keyInBody(body: unknown): string | undefined {
  const key =
    typeof body === 'object' && body !== null ? (body as { idempotency_key?: unknown }).idempotency_key : undefined;
  return typeof key === 'string' ? key : undefined;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}

export const newIdempotencyKey = randomId;

export function query(params: Record<string, string | number | undefined> | undefined): string {
  if (!params) return '';
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
