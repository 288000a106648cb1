/**
 * HMAC request signing shared by both API surfaces and by the service's own outbound calls.
 *
 *   signature = lowercase hex( HMAC-SHA256(secret, METHOD \n PATH \n TIMESTAMP \n BODY) )
 *
 * PATH includes the query string exactly as sent; TIMESTAMP is the header value verbatim (decimal
 * milliseconds since the epoch); BODY is the raw bytes as received, empty when there is none.
 * Verification runs on every request, so it feeds the parts to the HMAC one by one rather than
 * building the message string, and decodes the caller's signature once for all secrets.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const DEFAULT_REQUEST_TOLERANCE_MS = 300_000;

const SIGNATURE_HEX_LENGTH = 64;
const HEX_64 = /^[0-9a-fA-F]{64}$/;
// Fifteen digits reach the year 33000 and keep Number() exact, so the window arithmetic is sound.
const MS_TIMESTAMP = /^\d{1,15}$/;
// Ten-digit values are almost always Unix seconds sent by mistake; worth a hint in the message.
const LOOKS_LIKE_SECONDS = /^\d{9,10}$/;

export type RequestVerification =
  | { ok: true; secretIndex: number }
  | { ok: false; code: 'MISSING_CREDENTIALS' | 'STALE_TIMESTAMP' | 'INVALID_SIGNATURE'; message: string };

export interface VerifyRequestInput {
  /** Current secret first, then the previous one while a rotation overlap is open. */
  secrets: readonly string[];
  method: string;
  path: string;
  timestamp: string | undefined;
  signature: string | undefined;
  body: Buffer | string;
  now: number;
  toleranceMs?: number;
}

function requestMac(secret: string, method: string, path: string, timestamp: string, body: Buffer | string): Buffer {
  // One update for the short head and one for the body: each update is a call into native code.
  return createHmac('sha256', secret).update(`${method.toUpperCase()}\n${path}\n${timestamp}\n`).update(body).digest();
}

export function signRequest(
  secret: string,
  method: string,
  path: string,
  timestamp: string,
  body: Buffer | string,
): string {
  return requestMac(secret, method, path, timestamp, body).toString('hex');
}

/** Whole seconds when exact, otherwise millisecond precision so a 1 ms overshoot is visible. */
function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(3)} s`;
}

const fail = (code: 'MISSING_CREDENTIALS' | 'STALE_TIMESTAMP' | 'INVALID_SIGNATURE', message: string) =>
  ({ ok: false, code, message }) as const;

/**
 * Checks are ordered cheapest first so forged or replayed traffic is refused before any HMAC work.
 * The window is inclusive: a timestamp exactly `toleranceMs` away (either direction) is accepted.
 * Hex case is not significant: the signature is compared as bytes, so `AB..` and `ab..` are equal.
 */
export function verifyRequest(input: VerifyRequestInput): RequestVerification {
  const refused = checkSignatureHeaders(input);
  if (refused) return refused;
  return matchSignature(input);
}

/**
 * `verifyRequest` for headers that already passed `checkSignatureHeaders` (when the request arrived,
 * before its body): only the window is checked again (the body may have taken a while), not the
 * format, then the HMAC.
 */
export function verifyScreenedRequest(input: VerifyRequestInput): RequestVerification {
  const refused = checkWindow(input.timestamp!, input.now, input.toleranceMs ?? DEFAULT_REQUEST_TOLERANCE_MS);
  if (refused) return refused;
  return matchSignature(input);
}

// The caller's signature, decoded: reused by every verification, which is synchronous.
const provided = Buffer.alloc(SIGNATURE_HEX_LENGTH / 2);

function matchSignature(input: VerifyRequestInput): RequestVerification {
  const { secrets, method, path, body } = input;
  const timestamp = input.timestamp!;
  const signature = input.signature!;
  // All 64 characters must decode: a short write would leave the previous caller's bytes in place.
  if (signature.length !== SIGNATURE_HEX_LENGTH || provided.write(signature, 'hex') !== provided.length) {
    return fail('INVALID_SIGNATURE', `signature must be ${SIGNATURE_HEX_LENGTH} hex characters (HMAC-SHA256)`);
  }
  for (let i = 0; i < secrets.length; i++) {
    const expected = requestMac(secrets[i]!, method, path, timestamp, body);
    if (timingSafeEqual(expected, provided)) return { ok: true, secretIndex: i };
  }
  return fail(
    'INVALID_SIGNATURE',
    'signature does not match: sign METHOD, PATH with query string, x-timestamp and the raw body, newline-separated',
  );
}

/**
 * The checks that need no secret and no body (presence, format, timestamp window): run before the
 * body is read, so traffic with stale or malformed headers costs neither parsing nor an HMAC.
 */
export function checkSignatureHeaders(
  input: Pick<VerifyRequestInput, 'timestamp' | 'signature' | 'now' | 'toleranceMs'>,
): Extract<RequestVerification, { ok: false }> | null {
  const { timestamp, signature } = input;
  const tolerance = input.toleranceMs ?? DEFAULT_REQUEST_TOLERANCE_MS;

  if (!timestamp && !signature) {
    return fail('MISSING_CREDENTIALS', 'the request carries neither a timestamp nor a signature');
  }
  if (!timestamp) return fail('MISSING_CREDENTIALS', 'the request has a signature but no timestamp');
  if (!signature) return fail('MISSING_CREDENTIALS', 'the request has a timestamp but no signature');

  if (!MS_TIMESTAMP.test(timestamp)) {
    return fail(
      'INVALID_SIGNATURE',
      'x-timestamp must be milliseconds since epoch as an integer (digits only), ' +
        `got ${JSON.stringify(timestamp.slice(0, 40))}`,
    );
  }
  if (signature.length !== SIGNATURE_HEX_LENGTH || !HEX_64.test(signature)) {
    return fail(
      'INVALID_SIGNATURE',
      `signature must be ${SIGNATURE_HEX_LENGTH} hex characters (HMAC-SHA256), got ${signature.length} characters` +
        (signature.length === SIGNATURE_HEX_LENGTH ? ' that are not all hex' : ''),
    );
  }

  return checkWindow(timestamp, input.now, tolerance);
}

function checkWindow(
  timestamp: string,
  now: number,
  tolerance: number,
): Extract<RequestVerification, { ok: false }> | null {
  const skew = now - Number(timestamp);
  if (skew > tolerance) {
    const hint = LOOKS_LIKE_SECONDS.test(timestamp) ? ' (the value looks like seconds; send milliseconds)' : '';
    return fail('STALE_TIMESTAMP', `timestamp is ${seconds(skew)} old; the limit is ${seconds(tolerance)}${hint}`);
  }
  if (-skew > tolerance) {
    return fail(
      'STALE_TIMESTAMP',
      `timestamp is ${seconds(-skew)} in the future; the limit is ${seconds(tolerance)} (check the client clock)`,
    );
  }
  return null;
}
