import { concatBytes, hmacSha256, toHex, type Bytes } from './crypto.js';

/**
 * The service's request signature (both surfaces, and its own calls to an operator's wallet):
 * lowercase hex HMAC-SHA256(secret, METHOD \n PATH \n TIMESTAMP \n BODY), where PATH carries the
 * query string exactly as sent and BODY is the exact bytes sent (empty for a GET).
 */
export async function signRequest(input: {
  secret: string;
  method: string;
  path: string;
  timestamp: string;
  body: Bytes;
}): Promise<string> {
  const head = `${input.method.toUpperCase()}\n${input.path}\n${input.timestamp}\n`;
  return toHex(await hmacSha256(input.secret, concatBytes([head, input.body])));
}
