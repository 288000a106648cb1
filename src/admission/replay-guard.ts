import type { Redis } from 'ioredis';
import type { Database } from '../store/database';

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

const verdict = (stored: string | null | undefined, binding: string): SignatureVerdict =>
  stored === binding ? 'same-binding' : 'other-binding';

/** The `seen_signatures` table: one insert per state-changing request, purged with the idempotency keys. */
export class DatabaseSeenSignatures implements SeenSignatureStore {
  constructor(private readonly db: Database) {}

  async claim(signature: string, binding: string, expiresAt: number): Promise<SignatureVerdict> {
    const sql = 'INSERT INTO seen_signatures (signature, binding, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING';
    const params = [signature, binding, expiresAt];
    // PostgreSQL: one autocommit statement (a single round trip). SQLite: the write joins the
    // adapter's group commit, sharing its fsync with the requests around it.
    const inserted =
      this.db.dialect === 'postgres'
        ? await this.db.run(sql, params)
        : await this.db.transaction((tx) => tx.run(sql, params));
    if (inserted.changes === 1) return 'first';
    const row = await this.db.get<{ binding: string }>('SELECT binding FROM seen_signatures WHERE signature = ?', [
      signature,
    ]);
    return verdict(row?.binding, binding);
  }

  async purge(now: number): Promise<number> {
    const r = await this.db.transaction((tx) => tx.run('DELETE FROM seen_signatures WHERE expires_at < ?', [now]));
    return r.changes;
  }
}

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
