/**
 * Verifying what the service sends you, from any HTTP framework: pass the raw body exactly as
 * received (a string, a Buffer, a Uint8Array) and the request headers (a fetch `Headers`, or Node's
 * header object). Each check accepts several secrets, so a receiver keeps working across a rotation.
 *
 * - `verifyServiceSignature`: `x-service-signature: t=<ms>,v1=<hex>[,v1=<hex>…]` on every webhook
 *   delivery (HMAC-SHA256 keyed with the endpoint secret text over `<t>.<raw body>`).
 * - `verifyStandardWebhook`: the Standard Webhooks headers on deliveries to Surface A endpoints.
 * - `verifySignedRequest`: the request scheme on deliveries to Surface B endpoints and on the
 *   service's settle calls to your wallet (`X-Operator-Key`, `X-Timestamp`, `X-Signature`).
 */
import { concatBytes, fromBase64, fromHex, hmacSha256Matches, type Bytes } from './crypto.js';

export const DEFAULT_TOLERANCE_MS = 300_000;

export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export type VerificationFailure =
  | 'MISSING_HEADER'
  | 'MALFORMED_HEADER'
  | 'SIGNATURE_MISMATCH'
  | 'TIMESTAMP_OUTSIDE_TOLERANCE';

export type Verification =
  | {
      valid: true;
      /** ms since epoch the sender signed at */ timestamp: number;
      /** which of your secrets matched */ secretIndex: number;
    }
  | { valid: false; reason: VerificationFailure; message: string };

interface Common {
  rawBody: Bytes;
  /** Current secret first; add the previous one while a rotation overlap lasts. */
  secrets: readonly string[];
  toleranceMs?: number;
  now?: number;
}

/** Reads one header, case-insensitively, from either shape of header collection. */
export function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() === lower) return Array.isArray(v) ? v[0] : v;
  }
  return undefined;
}

const fail = (reason: VerificationFailure, message: string): Verification => ({ valid: false, reason, message });

function withinTolerance(timestampMs: number, input: Common): Verification | null {
  const tolerance = input.toleranceMs ?? DEFAULT_TOLERANCE_MS;
  const skew = (input.now ?? Date.now()) - timestampMs;
  if (Math.abs(skew) <= tolerance) return null;
  return fail(
    'TIMESTAMP_OUTSIDE_TOLERANCE',
    `the signature is ${Math.abs(skew)} ms ${skew > 0 ? 'old' : 'in the future'}; the tolerance is ${tolerance} ms`,
  );
}

function assertSecrets(secrets: readonly string[]): void {
  if (secrets.length === 0) throw new TypeError('pass at least one secret');
}

/** `x-service-signature`, on every delivery. Give the header value, or the headers. */
export async function verifyServiceSignature(
  input: Common & { header?: string; headers?: HeaderSource },
): Promise<Verification> {
  assertSecrets(input.secrets);
  const header = input.header ?? (input.headers ? headerValue(input.headers, 'x-service-signature') : undefined);
  if (!header) return fail('MISSING_HEADER', 'no x-service-signature header');
  let t: string | undefined;
  const v1: Uint8Array[] = [];
  for (const element of header.split(',')) {
    const eq = element.indexOf('=');
    if (eq <= 0) continue;
    const key = element.slice(0, eq).trim();
    const value = element.slice(eq + 1).trim();
    if (key === 't') t = value;
    else if (key === 'v1') {
      const mac = fromHex(value);
      if (mac && mac.length === 32) v1.push(mac);
    }
  }
  if (!t || !/^\d{1,15}$/.test(t)) return fail('MALFORMED_HEADER', 'expected t=<ms>,v1=<hex>: no valid t=');
  if (v1.length === 0) return fail('MALFORMED_HEADER', 'expected t=<ms>,v1=<hex>: no valid v1=');
  const signed = concatBytes([t, '.', input.rawBody]);
  for (const [secretIndex, secret] of input.secrets.entries()) {
    for (const mac of v1) {
      if (await hmacSha256Matches(secret, signed, mac)) {
        return withinTolerance(Number(t), input) ?? { valid: true, timestamp: Number(t), secretIndex };
      }
    }
  }
  return fail('SIGNATURE_MISMATCH', 'no v1 signature matches these secrets and this body');
}

/** Standard Webhooks (`webhook-id`, `webhook-timestamp` in seconds, `webhook-signature`). */
export async function verifyStandardWebhook(input: Common & { headers: HeaderSource }): Promise<Verification> {
  assertSecrets(input.secrets);
  const id = headerValue(input.headers, 'webhook-id');
  const seconds = headerValue(input.headers, 'webhook-timestamp');
  const signatures = headerValue(input.headers, 'webhook-signature');
  if (!id || !seconds || !signatures)
    return fail('MISSING_HEADER', 'webhook-id, webhook-timestamp and webhook-signature are all needed');
  if (!/^\d{1,12}$/.test(seconds))
    return fail('MALFORMED_HEADER', 'webhook-timestamp must be whole seconds since epoch');
  const macs = signatures
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => fromBase64(s.slice(3)))
    .filter((m): m is Uint8Array => m !== null && m.length === 32);
  if (macs.length === 0) return fail('MALFORMED_HEADER', 'webhook-signature has no v1,<base64> entry');
  const signed = concatBytes([id, '.', seconds, '.', input.rawBody]);
  for (const [secretIndex, secret] of input.secrets.entries()) {
    const key = fromBase64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
    if (!key || key.length === 0) throw new TypeError(`secret ${secretIndex} is not whsec_<base64>`);
    for (const mac of macs) {
      if (await hmacSha256Matches(key, signed, mac)) {
        const timestamp = Number(seconds) * 1000;
        return withinTolerance(timestamp, input) ?? { valid: true, timestamp, secretIndex };
      }
    }
  }
  return fail('SIGNATURE_MISMATCH', 'no v1 signature matches these secrets and this body');
}

/**
 * The request scheme: a Surface B delivery or a settle call to your wallet. `path` is the request
 * path with its query string as received (e.g. `req.url` in Node and Fastify, `url.pathname +
 * url.search` with fetch). `apiKey`, when given, must equal the X-Operator-Key header.
 */
export async function verifySignedRequest(
  input: Common & { method: string; path: string; headers: HeaderSource; apiKey?: string },
): Promise<Verification> {
  assertSecrets(input.secrets);
  const key = headerValue(input.headers, 'x-operator-key');
  const timestamp = headerValue(input.headers, 'x-timestamp');
  const signature = headerValue(input.headers, 'x-signature');
  if (!key || !timestamp || !signature)
    return fail('MISSING_HEADER', 'X-Operator-Key, X-Timestamp and X-Signature are all needed');
  if (input.apiKey !== undefined && key !== input.apiKey)
    return fail('SIGNATURE_MISMATCH', "X-Operator-Key is not this operator's key");
  if (!/^\d{1,15}$/.test(timestamp)) return fail('MALFORMED_HEADER', 'X-Timestamp must be milliseconds since epoch');
  const mac = fromHex(signature);
  if (!mac || mac.length !== 32) return fail('MALFORMED_HEADER', 'X-Signature must be 64 hex characters');
  const signed = concatBytes([`${input.method.toUpperCase()}\n${input.path}\n${timestamp}\n`, input.rawBody]);
  for (const [secretIndex, secret] of input.secrets.entries()) {
    if (await hmacSha256Matches(secret, signed, mac)) {
      return withinTolerance(Number(timestamp), input) ?? { valid: true, timestamp: Number(timestamp), secretIndex };
    }
  }
  return fail('SIGNATURE_MISMATCH', 'X-Signature does not match these secrets, this path and this body');
}
