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
    // The body is serialised once: every attempt sends (and signs) the very same bytes, so a retry
    // of a keyed write is recognised by the service as the same request.
    const raw = req.body === undefined ? '' : JSON.stringify(req.body);
    const url = new URL(this.baseUrl + req.path);
    const signedPath = url.pathname + url.search;
    for (let attempt = 1; ; attempt++) {
      const timestamp = String(this.now());
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
        if (req.signal?.aborted) throw req.signal.reason;
        if (!req.retrySafe || attempt >= this.maxAttempts) {
          throw new BettingNetworkError(
            `${req.method} ${signedPath}: no answer after ${attempt} attempt(s): ${describe(error)}`,
            {
              cause: error,
              idempotencyKey: req.idempotencyKey ?? keyInBody(req.body),
              attempts: attempt,
            },
          );
        }
        await sleep(this.backoff(attempt), req.signal);
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
      // 429 was refused before anything ran, so it is always safe to repeat; a 5xx is repeated
      // only where a repeat cannot apply the request twice.
      const retryable = response.status === 429 || (response.status >= 500 && req.retrySafe);
      if (!retryable || attempt >= this.maxAttempts) {
        throw new BettingApiError({
          surface: this.surface,
          status: response.status,
          body: data,
          requestId,
          idempotencyKey: req.idempotencyKey ?? keyInBody(req.body),
        });
      }
      const hinted = retryAfterMs(response.headers.get('retry-after'), this.now());
      await sleep(hinted === null ? this.backoff(attempt) : Math.min(hinted, this.maxDelayMs), req.signal);
    }
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
