import { isUtf8 } from 'node:buffer';
import { parse as losslessParse } from 'lossless-json';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { DomainError } from '../errors/codes';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body exactly as received: what request signatures are computed over. */
    rawBody?: Buffer;
  }
}

/** Declared on the root instance, so every request object has the field from the start. */
export function decorateRawBody(app: FastifyInstance): void {
  app.decorateRequest('rawBody', undefined);
}

/**
 * A route hook for a POST whose arguments are all optional (rotate-secret, a test delivery, a re-send):
 * a request with no body at all is read as `{}`. Its schema then refuses a stray field without refusing
 * the empty request, which Fastify would otherwise validate as a missing object.
 */
export function absentBodyAsEmpty(req: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  if (req.body === undefined) req.body = {};
  done();
}

/**
 * Any decimal of at most this many significant digits survives the trip to a double and back (a
 * double's DBL_DIG); a longer one may not: 12.339999999999999999 reads as 12.34.
 */
const EXACT_DIGITS = 15;

/**
 * A JSON number as the exact value the sender wrote, or a refusal: amounts are converted from the
 * double's shortest decimal (money/currency.ts), so a literal that reads as another decimal (more
 * digits than a double keeps, or beyond its range) must not be rounded into a different stake.
 */
function toNumber(text: string): number {
  const value = Number(text);
  if (text.length <= EXACT_DIGITS && !/[eE]/.test(text)) return value;
  if (Number.isFinite(value) && decimalOf(text) === decimalOf(String(value))) return value;
  const shown = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  throw new DomainError(
    'VALIDATION_FAILED',
    `the number ${shown} cannot be read exactly: send at most ${EXACT_DIGITS} significant digits`,
  );
}

const NUMBER_PARTS = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** A decimal literal's value as text: sign, significant digits and exponent (1.50, 15e-1 → "15e-1"). */
function decimalOf(text: string): string {
  const parts = NUMBER_PARTS.exec(text);
  if (!parts) return text;
  const fraction = parts[3] ?? '';
  const all = `${parts[2]}${fraction}`.replace(/^0+/, '');
  if (all === '') return '0';
  const significant = all.replace(/0+$/, '');
  const exponent = Number(parts[4] ?? 0) - fraction.length + (all.length - significant.length);
  return `${parts[1]}${significant}e${exponent}`;
}

const ENCODED = 'bodies must be sent unencoded: no Content-Encoding (or identity); gzip and the like are not accepted';
const NOT_UTF8 = 'JSON bodies must be UTF-8: send Content-Type: application/json with no charset or charset=utf-8';

/**
 * The body's bytes are what the signature covers and what is parsed, so they must be plain UTF-8
 * JSON as sent: a Content-Encoding other than identity, or a charset other than UTF-8, is refused
 * (415), never decoded nor read as something else. Called for every JSON body: a request that sends
 * neither header, or a Content-Type without parameters, costs two lookups and an indexOf.
 */
export function bodyEncodingRefusal(headers: IncomingHttpHeaders): DomainError | undefined {
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && !isIdentity(encoding)) return new DomainError('UNSUPPORTED_MEDIA_TYPE', ENCODED);
  const type = headers['content-type'];
  if (type !== undefined && type.indexOf(';') !== -1 && !charsetIsUtf8(type)) {
    return new DomainError('UNSUPPORTED_MEDIA_TYPE', NOT_UTF8);
  }
  return undefined;
}

const isIdentity = (encoding: string): boolean => {
  const value = encoding.trim().toLowerCase();
  return value === '' || value === 'identity';
};

/** Whether every charset parameter of a Content-Type is UTF-8 (utf-8 or utf8, any case, maybe quoted); none is fine. */
function charsetIsUtf8(type: string): boolean {
  if (type === 'application/json; charset=utf-8') return true;
  const params = type.split(';');
  for (let i = 1; i < params.length; i++) {
    const param = params[i]!;
    const eq = param.indexOf('=');
    if (eq === -1 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    let value = param
      .slice(eq + 1)
      .trim()
      .toLowerCase();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (value !== 'utf-8' && value !== 'utf8') return false;
  }
  return true;
}

const QUOTE = 0x22;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const DOT = 0x2e;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const isJsonSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * One pass over the body text. -1 when JSON.parse might not be exact: the text has a backslash,
 * some key text occurs twice, or a number has more digits than a double keeps or an exponent.
 * Otherwise the number of '{' and '[' outside strings, which bounds the nesting depth.
 *
 * Without a backslash every '"' in valid JSON delimits a string, so the strings found from each
 * opening quote are exactly the JSON strings, and those followed by a colon are the keys, written as
 * they will be read (no escapes to make two spellings of one key). If no key text appears twice
 * anywhere in the body, none appears twice in an object. Anything else (escapes, a key reused in
 * nested objects) goes to lossless-json, which checks per object.
 */
function scan(text: string): number {
  if (text.includes('\\')) return -1;
  let keys: Set<string> | null = null;
  let openings = 0;
  // Digits of the number being read (its '.' does not end it): a longer one, or one with an
  // exponent, may not read exactly, and goes to the parser that checks (toNumber).
  let digits = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c >= DIGIT_0 && c <= DIGIT_9) {
      digits++;
      continue;
    }
    if (digits > 0 && c !== DOT) {
      if (digits > EXACT_DIGITS || c === LOWER_E || c === UPPER_E) return -1;
      digits = 0;
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      openings++;
    } else if (c === QUOTE) {
      const close = text.indexOf('"', i + 1);
      // Unterminated: JSON.parse refuses it, and the slow parser says where.
      if (close < 0) return -1;
      let next = close + 1;
      while (next < length && isJsonSpace(text.charCodeAt(next))) next++;
      if (next < length && text.charCodeAt(next) === COLON) {
        const key = text.slice(i + 1, close);
        keys ??= new Set();
        if (keys.has(key)) return -1;
        keys.add(key);
      }
      i = close;
    }
  }
  return digits > EXACT_DIGITS ? -1 : openings;
}

/** True when JSON.parse (several times faster) reads the body exactly: no key twice, no escape, no long number. */
export const takesFastPath = (text: string): boolean => scan(text) >= 0;

/**
 * JSON bodies are parsed by lossless-json, which (unlike JSON.parse) refuses a key repeated with a
 * different value instead of silently keeping the last one: the signed bytes and what we act on
 * must not be able to disagree. Numbers become plain JS numbers; range checks happen in the schemas.
 */
export function parseJsonBody(raw: Buffer): unknown {
  if (raw.length === 0) throw new DomainError('MALFORMED_JSON', 'the request body is empty; send a JSON object');
  // JSON is UTF-8 (RFC 8259): two different byte strings must not decode to the same text, since
  // the signature covers the bytes and the idempotency hash the decoded value.
  if (!isUtf8(raw)) throw new DomainError('MALFORMED_JSON', 'the body is not valid UTF-8');
  const text = raw.toString('utf8');
  const openings = scan(text);
  let value: unknown;
  if (openings >= 0) {
    try {
      value = JSON.parse(text);
    } catch {
      // Fall through: lossless-json words the syntax error better (position and expectation).
    }
  }
  if (value === undefined) value = parseSlowly(text);
  // The walk can only find something when a value nests deeper than the limit (which takes more
  // openings than the limit) or when a \u escape may spell a lone surrogate or a NUL.
  if (openings < 0 || openings > MAX_JSON_DEPTH) checkShape(value, text.includes('\\u'));
  return value;
}

function parseSlowly(text: string): unknown {
  try {
    return losslessParse(text, null, toNumber);
  } catch (error) {
    if (error instanceof DomainError) throw error;
    // lossless-json recurses per nesting level: a deep enough body overflows the stack. Say what
    // is wrong with the body, never what happened inside the parser.
    if (error instanceof RangeError) throw tooDeep();
    const message = error instanceof Error ? error.message : String(error);
    if (/^Duplicate key/i.test(message)) {
      throw new DomainError('DUPLICATE_JSON_KEY', `the JSON body repeats a key: ${message}`);
    }
    throw new DomainError('MALFORMED_JSON', `the body is not valid JSON: ${message}`);
  }
}

/** No request of this service nests anywhere near this deep; the limit keeps every later walk cheap. */
export const MAX_JSON_DEPTH = 32;

const tooDeep = (): DomainError =>
  new DomainError('MALFORMED_JSON', `the JSON body is nested more than ${MAX_JSON_DEPTH} levels deep`);

// With the u flag a surrogate pair is one code point, so this matches only a surrogate standing alone.
const LONE_SURROGATE = /[\ud800-\udfff]/u;
// NUL (only reachable as \u0000): PostgreSQL text cannot hold it, and no field of this API needs it.
const NUL = '\u0000';

/**
 * Refuses what JSON.parse lets through but the service cannot act on: nesting beyond
 * MAX_JSON_DEPTH, and (only reachable through a \\u escape) a lone UTF-16 surrogate, which is not
 * a Unicode character (it cannot be hashed canonically, stored as UTF-8 or echoed back
 * faithfully), or a NUL character.
 * Iterative, so no body can overflow the stack here.
 */
function checkShape(root: unknown, mayHaveEscapes: boolean): void {
  const stack: { value: unknown; depth: number }[] = [{ value: root, depth: 0 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!;
    if (typeof value === 'string') {
      if (mayHaveEscapes) checkText(value);
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) throw tooDeep();
    if (Array.isArray(value)) {
      for (const item of value) stack.push({ value: item, depth: depth + 1 });
      continue;
    }
    for (const [key, item] of Object.entries(value)) {
      if (mayHaveEscapes) checkText(key);
      stack.push({ value: item, depth: depth + 1 });
    }
  }
}

function checkText(text: string): void {
  if (LONE_SURROGATE.test(text)) {
    const message = 'the body contains a \\u escape of a lone UTF-16 surrogate, which is not a Unicode character';
    throw new DomainError('MALFORMED_JSON', message);
  }
  if (text.includes(NUL)) {
    throw new DomainError('VALIDATION_FAILED', 'the body contains a NUL character (\\u0000), which no field accepts');
  }
}
