import { parse as losslessParse } from 'lossless-json';
import { DomainError } from '../errors/codes';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body exactly as received: what request signatures are computed over. */
    rawBody?: Buffer;
  }
}

const toNumber = (text: string): number => Number(text);

/**
 * JSON bodies are parsed by lossless-json, which (unlike JSON.parse) refuses a key repeated with a
 * different value instead of silently keeping the last one: the signed bytes and what we act on
 * must not be able to disagree. Numbers become plain JS numbers; range checks happen in the schemas.
 */
export function parseJsonBody(raw: Buffer): unknown {
  if (raw.length === 0) throw new DomainError('MALFORMED_JSON', 'the request body is empty; send a JSON object');
  const text = raw.toString('utf8');
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
