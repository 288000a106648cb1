/**
 * HMAC-SHA256 over WebCrypto (`globalThis.crypto.subtle`): present in Node 20+, Deno, Bun, browsers
 * and edge runtimes, so the package needs no dependency and no `node:` import.
 */

export type Bytes = string | Uint8Array | ArrayBuffer;

const encoder = new TextEncoder();

export function toBytes(input: Bytes): Uint8Array {
  if (typeof input === 'string') return encoder.encode(input);
  return input instanceof Uint8Array ? input : new Uint8Array(input);
}

export function concatBytes(parts: Bytes[]): Uint8Array {
  const chunks = parts.map(toBytes);
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function subtle(): SubtleCrypto {
  const s = globalThis.crypto?.subtle;
  if (!s) throw new Error('WebCrypto (globalThis.crypto.subtle) is not available in this runtime');
  return s;
}

// Importing a key costs more than one HMAC; a client signs many requests with the same secret.
const keyCache = new Map<string, Promise<CryptoKey>>();

export function hmacKey(secret: Bytes): Promise<CryptoKey> {
  const cacheId = typeof secret === 'string' ? `s:${secret}` : null;
  const cached = cacheId ? keyCache.get(cacheId) : undefined;
  if (cached) return cached;
  const key = subtle().importKey('raw', toBytes(secret) as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
    'verify',
  ]);
  if (cacheId) {
    if (keyCache.size > 100) keyCache.clear();
    keyCache.set(cacheId, key);
  }
  return key;
}

export async function hmacSha256(secret: Bytes, message: Bytes): Promise<Uint8Array> {
  return new Uint8Array(await subtle().sign('HMAC', await hmacKey(secret), toBytes(message) as BufferSource));
}

/** Constant-time: WebCrypto's verify compares the MACs itself. */
export async function hmacSha256Matches(secret: Bytes, message: Bytes, mac: Uint8Array): Promise<boolean> {
  return subtle().verify('HMAC', await hmacKey(secret), mac as BufferSource, toBytes(message) as BufferSource);
}

export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

export function fromHex(hex: string): Uint8Array | null {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) return null;
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

export function fromBase64(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  try {
    const binary = atob(text);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}

export function randomId(): string {
  return globalThis.crypto.randomUUID();
}
