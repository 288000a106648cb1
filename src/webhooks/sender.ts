/**
 * One HTTP attempt of one delivery: the signed headers for the endpoint's surface, the POST through a
 * shared keep-alive agent, and a classification of the answer. Never throws: every outcome,
 * including a refused target or a timeout, is an attempt result to be logged.
 */
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { traced } from '../observability/outbound';
import { signRequest } from '../signing/request-signature';
import { serviceSignatureHeader, standardWebhookHeaders, SERVICE_SIGNATURE_HEADER } from '../signing/webhook-signature';
import type { EndpointSurface } from './endpoints';
import { WEBHOOK_PAYLOAD_VERSION } from './payloads';
import { isNonPublicAddress, publicOnlyLookup } from './url-safety';

export const RESPONSE_EXCERPT_CHARS = 500;
/** Bytes read from a response before the rest is discarded: enough for the excerpt, bounded for a hostile receiver. */
const MAX_RESPONSE_BYTES = 4096;

export interface SigningMaterial {
  surface: EndpointSurface;
  url: string;
  /** Endpoint secrets, current first (several during a rotation overlap). */
  endpointSecrets: string[];
  /** Surface B: the operator's API key and current secret. */
  operatorKey: string | null;
  operatorSecret: string | null;
}

export interface OutgoingDelivery {
  deliveryId: string;
  eventId: string;
  eventType: string;
  attempt: number;
  body: string;
}

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  responseExcerpt: string | null;
  /** Retry-After from the receiver, in ms, when it gave one. */
  retryAfterMs: number | null;
}

export function signedHeaders(m: SigningMaterial, d: OutgoingDelivery, now: number): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'round-betting-service-webhooks/1',
    'webhook-id': d.eventId,
    'x-event-type': d.eventType,
    'x-event-version': WEBHOOK_PAYLOAD_VERSION,
    'x-delivery-id': d.deliveryId,
    'x-delivery-attempt': String(d.attempt),
    [SERVICE_SIGNATURE_HEADER]: serviceSignatureHeader(m.endpointSecrets, now, d.body),
  };
  if (m.surface === 'A') {
    Object.assign(headers, standardWebhookHeaders({ messageId: d.eventId, timestampMs: now, rawBody: d.body, secrets: m.endpointSecrets }));
  } else {
    const url = new URL(m.url);
    const path = `${url.pathname}${url.search}`;
    const timestamp = String(now);
    headers['x-operator-key'] = m.operatorKey ?? '';
    headers['x-timestamp'] = timestamp;
    headers['x-signature'] = signRequest(m.operatorSecret ?? '', 'POST', path, timestamp, d.body);
  }
  return headers;
}

/** Seconds or an HTTP date, as RFC 9110 allows; anything else is ignored. Capped at a day. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return null;
  const trimmed = raw.trim();
  let ms: number;
  if (/^\d+$/.test(trimmed)) ms = Number(trimmed) * 1000;
  else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return null;
    ms = at - now;
  }
  return Math.min(Math.max(0, ms), 86_400_000);
}

export interface SenderOptions {
  timeoutMs: number;
  allowPrivateTargets: boolean;
  /** Sockets kept per target origin. */
  connectionsPerOrigin?: number;
}

export class WebhookSender {
  private readonly agent: Agent;

  constructor(private readonly o: SenderOptions) {
    this.agent = new Agent({
      connections: o.connectionsPerOrigin ?? 64,
      keepAliveTimeout: 30_000,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
      connect: {
        timeout: o.timeoutMs,
        ...(o.allowPrivateTargets ? {} : { lookup: publicOnlyLookup as never }),
      },
    });
  }

  /** Checks that need no network: the DNS side is enforced in the socket's lookup. */
  private refuse(url: URL): string | null {
    if (this.o.allowPrivateTargets) return null;
    if (url.protocol !== 'https:') return 'refused: the target URL is not https';
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && isNonPublicAddress(host)) return `refused: ${host} is not a public address`;
    return null;
  }

  async send(m: SigningMaterial, d: OutgoingDelivery, now: number): Promise<AttemptResult> {
    const started = performance.now();
    const latency = () => Math.round(performance.now() - started);
    let url: URL;
    try {
      url = new URL(m.url);
    } catch {
      return failure(null, 0, 'refused: the endpoint URL is not valid');
    }
    const refusal = this.refuse(url);
    if (refusal) return failure(null, 0, refusal);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.o.timeoutMs);
    try {
      // undici's request never follows redirects: a 3xx is an answer like any other non-2xx.
      const headers = signedHeaders(m, d, now);
      const res = await traced('webhook delivery', url, headers, () =>
        request(url, { method: 'POST', headers, body: d.body, dispatcher: this.agent, signal: controller.signal }),
      );
      const excerpt = await readExcerpt(res.body);
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return {
        ok,
        statusCode: res.statusCode,
        latencyMs: latency(),
        error: ok ? null : `HTTP ${res.statusCode}`,
        responseExcerpt: excerpt,
        retryAfterMs: ok ? null : parseRetryAfter(res.headers['retry-after'], Date.now()),
      };
    } catch (error) {
      const e = error as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      const message = controller.signal.aborted
        ? `timeout: no complete answer within ${this.o.timeoutMs} ms`
        : `${e.code ?? e.cause?.code ?? 'ERROR'}: ${(e.cause?.message ?? e.message).slice(0, 200)}`;
      return failure(null, latency(), message);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => {});
  }
}

function failure(statusCode: number | null, latencyMs: number, error: string): AttemptResult {
  return { ok: false, statusCode, latencyMs, error, responseExcerpt: null, retryAfterMs: null };
}

async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= MAX_RESPONSE_BYTES) {
      // The rest is of no interest; dropping it costs this connection, not the dispatcher's time.
      body.destroy();
      break;
    }
  }
  if (size === 0) return null;
  const text = Buffer.concat(chunks).toString('utf8');
  return text.length > RESPONSE_EXCERPT_CHARS ? `${text.slice(0, RESPONSE_EXCERPT_CHARS)}…` : text;
}
