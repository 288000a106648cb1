/**
 * The one way the service calls URLs that operators chose: wallet settle calls and webhook
 * deliveries. The far end may be broken or hostile, so both get the same limits:
 * - a deadline for the whole exchange (connect, headers, body) on top of undici's headers and
 *   body idle timeouts, so neither a silent server nor one dripping a byte at a time holds a worker;
 * - a cap on the reply's size: a declared Content-Length over the cap is refused before reading,
 *   and reading stops at the cap, so a 200 MB answer costs at most the cap (plus one socket chunk);
 * - unless the development setting allows private targets: https only, no IP-literal host outside
 *   public unicast, and a socket lookup that refuses non-public DNS answers at connect time.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
import { isNonPublicAddress, publicOnlyLookupVia, systemResolver, type Resolver } from './url-safety';

export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;
/**
 * Attempts one target (a webhook endpoint, an operator's wallet) may have in flight at once, on one
 * instance. The outboxes hold to it, and the agent puts no cap of its own on sockets per origin: an
 * attempt that queued for a socket would see its deadline run before it was sent, and targets of
 * different operators that share an origin would wait behind each other's slow answers.
 */
export const ATTEMPTS_PER_TARGET = 64;

export interface OutboundAgentOptions {
  timeoutMs: number;
  /** Development only: http and loopback/private targets allowed, no connect-time address check. */
  allowPrivateTargets: boolean;
  /** How host names are resolved at connect time; the system resolver unless a test injects one. */
  resolve?: Resolver;
}

export function createOutboundAgent(o: OutboundAgentOptions): Agent {
  const lookup = o.allowPrivateTargets ? {} : { lookup: publicOnlyLookupVia(o.resolve ?? systemResolver) };
  return new Agent({
    // No per-origin cap (undici's default): the outboxes bound attempts per target and in all.
    connections: null,
    keepAliveTimeout: 30_000,
    headersTimeout: o.timeoutMs,
    bodyTimeout: o.timeoutMs,
    // undici hands these options to net/tls.connect, whose lookup decides the address connected to.
    connect: { timeout: o.timeoutMs, ...(lookup as object) },
  });
}

/**
 * The checks that need no network, made before every call: a socket given an IP literal never
 * calls its lookup, so a literal host is judged here. Returns why the target is refused, or null.
 */
export function refuseTarget(url: URL, allowPrivateTargets: boolean): string | null {
  if (allowPrivateTargets) return null;
  if (url.protocol !== 'https:') return 'refused: the target URL is not https';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && isNonPublicAddress(host)) return `refused: ${host} is not a public address`;
  return null;
}

/** No complete answer within the deadline. The far end may still have acted: the outcome is unknown. */
export class OutboundTimeoutError extends Error {
  override readonly name = 'OutboundTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`no complete answer within ${timeoutMs} ms`);
  }
}

/** The reply was bigger than the cap; it was not read to the end. */
export class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';
  constructor(
    readonly statusCode: number,
    readonly limitBytes: number,
    /** Bytes taken from the socket before reading stopped: at most the cap plus one chunk. */
    readonly bytesRead: number,
    readonly declaredBytes: number | null,
  ) {
    super(
      `the reply is larger than ${limitBytes} bytes` +
        (declaredBytes === null ? '' : ` (Content-Length ${declaredBytes})`) +
        ` (HTTP ${statusCode})`,
    );
  }
}

export interface LimitedResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface LimitedPost {
  headers: Record<string, string>;
  body: string;
  dispatcher: Dispatcher;
  timeoutMs: number;
  maxResponseBytes: number;
}

/**
 * POSTs and reads the whole reply within the limits. Throws OutboundTimeoutError past the
 * deadline, ResponseTooLargeError past the size cap, and the network error otherwise.
 */
export async function postWithLimits(url: URL, init: LimitedPost): Promise<LimitedResponse> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), init.timeoutMs);
  try {
    // undici's request never follows redirects: a 3xx is an answer like any other.
    const res = await request(url, {
      method: 'POST',
      headers: init.headers,
      body: init.body,
      dispatcher: init.dispatcher,
      signal: controller.signal,
    });
    const body = await readCapped(res, init.maxResponseBytes);
    return { statusCode: res.statusCode, headers: res.headers, body };
  } catch (error) {
    if (error instanceof ResponseTooLargeError) throw error;
    if (controller.signal.aborted || isUndiciTimeout(error)) throw new OutboundTimeoutError(init.timeoutMs);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

async function readCapped(res: Dispatcher.ResponseData, maxBytes: number): Promise<Buffer> {
  const declaredHeader = res.headers['content-length'];
  const declared = typeof declaredHeader === 'string' && /^\d+$/.test(declaredHeader) ? Number(declaredHeader) : null;
  if (declared !== null && declared > maxBytes) {
    // Dropping the body closes this connection: cheaper than reading what will be thrown away.
    res.body.destroy();
    throw new ResponseTooLargeError(res.statusCode, maxBytes, 0, declared);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      res.body.destroy();
      throw new ResponseTooLargeError(res.statusCode, maxBytes, size, declared);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

function isUndiciTimeout(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT';
}
