/**
 * Signatures on outbound webhook deliveries. Every delivery carries two header families:
 *
 * - `x-service-signature: t=<ms>,v1=<hex>[,v1=<hex>...]`, HMAC-SHA256 keyed with the endpoint secret
 *   string itself (UTF-8) over `${t}.${rawBody}`;
 * - Standard Webhooks (`webhook-id`, `webhook-timestamp` in seconds, `webhook-signature`), keyed with
 *   the base64-decoded part after `whsec_` over `${id}.${seconds}.${rawBody}`, so receivers can use
 *   any off-the-shelf Standard Webhooks verifier.
 *
 * During a secret rotation both the old and the new secret sign, one signature per secret, so a
 * receiver holding either one accepts the delivery.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const DEFAULT_WEBHOOK_TOLERANCE_MS = 300_000;
export const SERVICE_SIGNATURE_HEADER = 'x-service-signature';

const SECRET_PREFIX = 'whsec_';
const HEX_64 = /^[0-9a-fA-F]{64}$/;
const MS_TIMESTAMP = /^\d{1,15}$/;
const LOOKS_LIKE_SECONDS = /^\d{9,10}$/;

/** `whsec_` + base64 of 24 random bytes (32 base64 characters, no padding). */
export function generateEndpointSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

function assertSigningInputs(secrets: readonly string[], timestampMs: number): void {
  if (secrets.length === 0) throw new Error('at least one endpoint secret is needed to sign a delivery');
  if (!Number.isSafeInteger(timestampMs) || timestampMs < 0) {
    throw new RangeError(`timestampMs must be a non-negative integer, got ${timestampMs}`);
  }
}

function serviceMac(secret: string, t: string, rawBody: string): Buffer {
  return createHmac('sha256', secret).update(t).update('.').update(rawBody).digest();
}

export function serviceSignatureHeader(secrets: readonly string[], timestampMs: number, rawBody: string): string {
  assertSigningInputs(secrets, timestampMs);
  const t = String(timestampMs);
  let header = `t=${t}`;
  for (const secret of secrets) header += `,v1=${serviceMac(secret, t, rawBody).toString('hex')}`;
  return header;
}

export interface StandardWebhookHeaders {
  'webhook-id': string;
  /** Unix time in SECONDS, as the Standard Webhooks specification requires. */
  'webhook-timestamp': string;
  /** Space-separated `v1,<base64>` entries, one per secret. */
  'webhook-signature': string;
}

function standardKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0) throw new Error('endpoint secret decodes to an empty key');
  return key;
}

export function standardWebhookHeaders(input: {
  messageId: string;
  timestampMs: number;
  rawBody: string;
  secrets: readonly string[];
}): StandardWebhookHeaders {
  const { messageId, timestampMs, rawBody, secrets } = input;
  assertSigningInputs(secrets, timestampMs);
  if (messageId === '') throw new Error('messageId must not be empty');
  const seconds = String(Math.floor(timestampMs / 1000));
  const signatures = secrets.map((secret) => {
    const mac = createHmac('sha256', standardKey(secret))
      .update(messageId)
      .update('.')
      .update(seconds)
      .update('.')
      .update(rawBody)
      .digest('base64');
    return `v1,${mac}`;
  });
  return { 'webhook-id': messageId, 'webhook-timestamp': seconds, 'webhook-signature': signatures.join(' ') };
}

export type ServiceSignatureVerification =
  | { valid: true; timestamp: number }
  | {
      valid: false;
      reason: 'MALFORMED_HEADER' | 'TIMESTAMP_OUTSIDE_TOLERANCE' | 'SIGNATURE_MISMATCH';
      message: string;
      timestamp?: number;
    };

type ParsedHeader = { ok: true; t: string; v1: string[] } | { ok: false; message: string };

const EXPECTED_SHAPE = 'expected t=<ms>,v1=<hex>';

function parseServiceHeader(header: string): ParsedHeader {
  if (header.trim() === '') return { ok: false, message: `the header is empty (${EXPECTED_SHAPE})` };
  let t: string | undefined;
  const v1: string[] = [];
  const elements = header.split(',');
  for (let i = 0; i < elements.length; i++) {
    const element = elements[i]!.trim();
    const eq = element.indexOf('=');
    if (eq <= 0) {
      return {
        ok: false,
        message: `element ${i + 1} (${JSON.stringify(element.slice(0, 40))}) is not key=value (${EXPECTED_SHAPE})`,
      };
    }
    const key = element.slice(0, eq);
    const value = element.slice(eq + 1);
    if (key === 't') {
      if (t !== undefined) return { ok: false, message: 'more than one t= element' };
      if (!MS_TIMESTAMP.test(value)) {
        return {
          ok: false,
          message: `t= must be milliseconds since epoch as an integer, got ${JSON.stringify(value.slice(0, 40))}`,
        };
      }
      t = value;
    } else if (key === 'v1') {
      v1.push(value);
    }
    // Other keys are ignored so a future scheme (v2=...) can be added alongside v1.
  }
  if (t === undefined) return { ok: false, message: `no t= element (${EXPECTED_SHAPE})` };
  if (v1.length === 0) return { ok: false, message: `no v1= element (${EXPECTED_SHAPE})` };
  return { ok: true, t, v1 };
}

/** Coarse for a person ("3 h 2 min"); callers append the exact milliseconds alongside. */
function humanDuration(ms: number): string {
  const units: Array<[number, string]> = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (let i = 0; i < units.length; i++) {
    const [size, name] = units[i]!;
    if (ms < size) continue;
    const whole = Math.floor(ms / size);
    const next = units[i + 1];
    const rest = next ? Math.floor((ms % size) / next[0]) : 0;
    return next && rest > 0 ? `${whole} ${name} ${rest} ${next[1]}` : `${whole} ${name}`;
  }
  return `${ms} ms`;
}

/**
 * Checks the signature before the timestamp so an integrator replaying an old delivery learns that
 * the secret and body are right and only the age is the problem. The window is inclusive.
 */
export function verifyServiceSignature(input: {
  secret: string;
  rawBody: string;
  header: string;
  now: number;
  toleranceMs?: number;
}): ServiceSignatureVerification {
  const tolerance = input.toleranceMs ?? DEFAULT_WEBHOOK_TOLERANCE_MS;
  const parsed = parseServiceHeader(input.header);
  if (!parsed.ok) return { valid: false, reason: 'MALFORMED_HEADER', message: parsed.message };

  const timestamp = Number(parsed.t);
  const expected = serviceMac(input.secret, parsed.t, input.rawBody);
  let matched = false;
  let notHex = 0;
  for (const candidate of parsed.v1) {
    if (!HEX_64.test(candidate)) {
      notHex++;
      continue;
    }
    if (timingSafeEqual(expected, Buffer.from(candidate, 'hex'))) matched = true;
  }
  if (!matched) {
    const n = parsed.v1.length;
    const head = n === 1 ? 'the v1 signature does not match' : `none of the ${n} v1 signatures matches`;
    const tail =
      notHex === 0
        ? ''
        : n === 1
          ? ' (it is not 64 hex characters)'
          : ` (${notHex} of them ${notHex === 1 ? 'is' : 'are'} not 64 hex characters)`;
    return {
      valid: false,
      reason: 'SIGNATURE_MISMATCH',
      message: `${head} this secret and body${tail}`,
      timestamp,
    };
  }

  const skew = input.now - timestamp;
  if (Math.abs(skew) > tolerance) {
    const when = skew > 0 ? 'old' : 'in the future';
    const hint =
      skew > 0 && LOOKS_LIKE_SECONDS.test(parsed.t) ? '; t= looks like seconds, it must be milliseconds' : '';
    return {
      valid: false,
      reason: 'TIMESTAMP_OUTSIDE_TOLERANCE',
      message:
        `signature matches, but the timestamp is ${humanDuration(Math.abs(skew))} ${when} ` +
        `(${Math.abs(skew)} ms); the tolerance is ${humanDuration(tolerance)}${hint}`,
      timestamp,
    };
  }
  return { valid: true, timestamp };
}
