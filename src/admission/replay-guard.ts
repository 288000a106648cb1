import type { Redis } from 'ioredis';

/**
 * Whether an accepted signature was seen before: `first` (recorded now), `same-binding` (seen, with
 * the same Idempotency-Key: an idempotent retry) or `other-binding` (seen with another key, or on a
 * route where no repeat is legitimate).
 */
export type SignatureVerdict = 'first' | 'same-binding' | 'other-binding';

/**
 * Signatures accepted within the tolerance window, shared by every instance (the database, or Redis
 * when configured). A signature is unique to its bytes (method, path with query, timestamp, body)
 * and the operator's secret, so seeing it twice means the same request was sent twice.
 */
export interface SeenSignatureStore {
  claim(signature: string, binding: string, expiresAt: number): Promise<SignatureVerdict>;
  /** Forgets signatures whose timestamp can no longer pass the window check. */
  purge(now: number): Promise<number>;
}

/** The verdict on a signature seen before, from the binding it was first recorded with (both stores). */
export const verdict = (stored: string | null | undefined, binding: string): SignatureVerdict =>
  stored === binding ? 'same-binding' : 'other-binding';

// SET NX and, when the key exists, its value, in one atomic round trip (SET … NX GET needs Redis 7).
const CLAIM_SCRIPT = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
return redis.call('GET', KEYS[1])
`;

type ClaimScript = (key: string, binding: string, ttlMs: number) => Promise<string | null>;

/** Redis: `SET key binding NX PX ttl`, the key expiring on its own when the window has passed. */
export class RedisSeenSignatures implements SeenSignatureStore {
  private readonly script: ClaimScript;

  constructor(
    redis: Redis,
    private readonly now: () => number,
    private readonly prefix = 'sig:',
  ) {
    if (!('claimSignature' in redis)) redis.defineCommand('claimSignature', { numberOfKeys: 1, lua: CLAIM_SCRIPT });
    this.script = (redis as unknown as { claimSignature: ClaimScript }).claimSignature.bind(redis);
  }

  async claim(signature: string, binding: string, expiresAt: number): Promise<SignatureVerdict> {
    const ttlMs = Math.max(1000, expiresAt - this.now());
    const existing = await this.script(this.prefix + signature, binding, ttlMs);
    return existing === null ? 'first' : verdict(existing, binding);
  }

  async purge(): Promise<number> {
    return 0;
  }
}
