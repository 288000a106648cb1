/**
 * One HTTP attempt of one delivery: the signed headers for the endpoint's surface, the POST through a
 * shared keep-alive agent, and a classification of the answer. Never throws: every outcome,
 * including a refused target or a timeout, is an attempt result to be logged.
 */
import type { Agent } from 'undici';
import {
  createOutboundAgent,
  DEFAULT_MAX_RESPONSE_BYTES,
  OutboundTimeoutError,
  postWithLimits,
  refuseTarget,
  ResponseTooLargeError,
} from '../outbound/outbound-http';
import { traced } from '../observability/outbound';
import { signRequest } from '../signing/request-signature';
import { serviceSignatureHeader, standardWebhookHeaders, SERVICE_SIGNATURE_HEADER } from '../signing/webhook-signature';
import type { EndpointSurface } from './endpoints';
import { WEBHOOK_PAYLOAD_VERSION } from './payloads';
import type { Resolver } from '../outbound/url-safety';

export const RESPONSE_EXCERPT_CHARS = 500;

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
    Object.assign(
      headers,
      standardWebhookHeaders({ messageId: d.eventId, timestampMs: now, rawBody: d.body, secrets: m.endpointSecrets }),
    );
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
  /** A reply larger than this fails the attempt (default 64 KiB); reading stops there. */
  maxResponseBytes?: number;
  /** Connect-time resolution; injectable so tests need no DNS. */
  resolve?: Resolver;
}

export class WebhookSender {
  private readonly agent: Agent;
  private readonly maxResponseBytes: number;

  constructor(private readonly options: SenderOptions) {
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.agent = createOutboundAgent({
      timeoutMs: options.timeoutMs,
      allowPrivateTargets: options.allowPrivateTargets,
      resolve: options.resolve,
    });
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
    const refusal = refuseTarget(url, this.options.allowPrivateTargets);
    if (refusal) return failure(null, 0, refusal);
    try {
      const headers = signedHeaders(m, d, now);
      const res = await traced('webhook delivery', url, headers, () =>
        postWithLimits(url, {
          headers,
          body: d.body,
          dispatcher: this.agent,
          timeoutMs: this.options.timeoutMs,
          maxResponseBytes: this.maxResponseBytes,
        }),
      );
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return {
        ok,
        statusCode: res.statusCode,
        latencyMs: latency(),
        error: ok ? null : `HTTP ${res.statusCode}`,
        responseExcerpt: excerpt(res.body),
        retryAfterMs: ok ? null : parseRetryAfter(res.headers['retry-after'], Date.now()),
      };
    } catch (error) {
      if (error instanceof ResponseTooLargeError) return failure(error.statusCode, latency(), error.message);
      if (error instanceof OutboundTimeoutError) return failure(null, latency(), `timeout: ${error.message}`);
      const e = error as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      const detail = (e.cause?.message ?? e.message).slice(0, 200);
      return failure(null, latency(), `${e.code ?? e.cause?.code ?? 'ERROR'}: ${detail}`);
    }
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => {});
  }
}

function failure(statusCode: number | null, latencyMs: number, error: string): AttemptResult {
  return { ok: false, statusCode, latencyMs, error, responseExcerpt: null, retryAfterMs: null };
}

function excerpt(body: Buffer): string | null {
  if (body.length === 0) return null;
  const text = body.toString('utf8');
  return text.length > RESPONSE_EXCERPT_CHARS ? `${text.slice(0, RESPONSE_EXCERPT_CHARS)}…` : text;
}
