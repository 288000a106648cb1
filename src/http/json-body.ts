import { parse as losslessParse } from 'lossless-json';
import { DomainError } from '../errors/codes';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body exactly as received: what request signatures are computed over. */
    rawBody?: Buffer;
  }
}

const toNumber = (text: string): number => Number(text);

// Every string of a backslash-free text, in order (each match starts at an opening quote, since
// the previous match ended at a closing one); those followed by a colon are object keys.
const STRING_TOKEN = /"([^"]*)"(\s*:)?/g;

/**
 * True when no key can occur twice in one object, so JSON.parse (several times faster) is exact.
 * Without a backslash every '"' in valid JSON delimits a string, so the tokens found are exactly
 * the keys, written as they will be read (no escapes to make two spellings of one key). If no key
 * text appears twice anywhere in the body, none appears twice in an object. Anything else (escapes,
 * a key reused in nested objects) goes to lossless-json, which checks per object.
 */
export function cannotRepeatAKey(text: string): boolean {
  if (text.includes('\\')) return false;
  const seen = new Set<string>();
  for (const match of text.matchAll(STRING_TOKEN)) {
    if (match[2] === undefined) continue;
    const key = match[1]!;
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

/**
 * JSON bodies are parsed by lossless-json, which (unlike JSON.parse) refuses a key repeated with a
 * different value instead of silently keeping the last one: the signed bytes and what we act on
 * must not be able to disagree. Numbers become plain JS numbers; range checks happen in the schemas.
 */
export function parseJsonBody(raw: Buffer): unknown {
  if (raw.length === 0) throw new DomainError('MALFORMED_JSON', 'the request body is empty; send a JSON object');
  const text = raw.toString('utf8');
  if (cannotRepeatAKey(text)) {
    try {
      return JSON.parse(text);
    } catch {
      // Fall through: lossless-json words the syntax error better (position and expectation).
    }
  }
  try {
    return losslessParse(text, null, toNumber);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/^Duplicate key/i.test(message)) {
      throw new DomainError('DUPLICATE_JSON_KEY', `the JSON body repeats a key: ${message}`);
    }
    throw new DomainError('MALFORMED_JSON', `the body is not valid JSON: ${message}`);
  }
}
