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

/**
 * How far past the moment a lost record was noticed a signed timestamp must lie to be trusted again
 * (for clocks of callers and Redis that differ a little). See `RedisSeenSignatures`.
 */
export const LOST_RECORD_MARGIN_MS = 2_000;

/**
 * Whether this deployment has kept its replay record in Redis before (the database remembers it when Redis
 * does not): a marker missing then means a loss, not a first start.
 */
export interface ReplayRecordHistory {
  usedBefore(): Promise<boolean>;
  noteUse(): Promise<void>;
}

/** A claim refused because the Redis record was lost (restart without persistence, FLUSHALL, eviction). */
export class ReplayRecordLost extends Error {
  constructor() {
    super('the replay record in Redis was lost; requests signed before that cannot be checked');
    this.name = 'ReplayRecordLost';
  }
}

// KEYS[1]: the signature's key; KEYS[2]: the marker, "the record is complete for signatures timestamped
// from this instant (ms) on". A missing marker on a running deployment means Redis lost its data (a
// restart without persistence, FLUSHALL, an eviction): signatures seen before then are forgotten, so
// the record is trusted again only for timestamps from now on (the Redis server's clock, the one every
// instance shares). Then SET NX and, when the key exists, its value, in one atomic round trip.
// Returns {0} first, {1, binding} seen before, {2} signed before the record was lost.
const CLAIM_SCRIPT = `
local since = redis.call('GET', KEYS[2])
if not since then
  local time = redis.call('TIME')
  since = tostring(tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000))
  redis.call('SET', KEYS[2], since)
end
if tonumber(ARGV[3]) < tonumber(since) + tonumber(ARGV[4]) then return { 2 } end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return { 0 } end
return { 1, redis.call('GET', KEYS[1]) }
`;

// After a reconnect: a Redis that restarted without its data has no marker any more; note the loss now.
const NOTE_LOSS_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local time = redis.call('TIME')
redis.call('SET', KEYS[1], tostring(tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)))
return 1
`;

type ClaimScript = (
  key: string,
  marker: string,
  binding: string,
  ttlMs: number,
  signedAt: number,
  marginMs: number,
) => Promise<[number, string?]>;

/**
 * Redis: `SET key binding NX PX ttl`, the key expiring on its own when the window has passed.
 *
 * Redis may lose the record while the service runs (a restart without persistence, FLUSHALL, an
 * eviction); a captured request would then be taken a second time. A marker key without expiry
 * tells: created empty-handed ("complete from the start") by the first instance of a deployment,
 * re-created with the time of the loss by the first claim (or reconnect, or start: see `open`) that
 * finds it gone.
 * Requests signed before that time (plus `LOST_RECORD_MARGIN_MS`) are refused with 503 (fail closed);
 * a client that signs its retry afresh gets through once the margin has passed.
 */
export class RedisSeenSignatures implements SeenSignatureStore {
  private readonly script: ClaimScript;
  private readonly marker: string;

  constructor(
    private readonly redis: Redis,
    private readonly now: () => number,
    private readonly prefix = 'sig:',
  ) {
    if (!('claimSignature' in redis)) redis.defineCommand('claimSignature', { numberOfKeys: 2, lua: CLAIM_SCRIPT });
    if (!('noteRecordLoss' in redis)) redis.defineCommand('noteRecordLoss', { numberOfKeys: 1, lua: NOTE_LOSS_SCRIPT });
    this.script = (redis as unknown as { claimSignature: ClaimScript }).claimSignature.bind(redis);
    this.marker = `${prefix}complete-since`;
    const noteLoss = (redis as unknown as { noteRecordLoss: (k: string) => Promise<number> }).noteRecordLoss;
    this.noteLoss = () => noteLoss.call(redis, this.marker);
    redis.on('ready', () => {
      this.noteLoss().catch(() => {});
    });
  }

  private readonly noteLoss: () => Promise<number>;

  /**
   * Before the first claim: a Redis without the marker is either a deployment's first (nothing was seen
   * before: the record is complete from the start) or one that lost its data while no instance ran, which
   * only the database can tell (`history`). The loss is then noted at once, as a running instance would.
   */
  async open(history: ReplayRecordHistory): Promise<void> {
    const usedBefore = await history.usedBefore();
    try {
      if (usedBefore) await this.noteLoss();
      else await this.redis.set(this.marker, '0', 'NX');
    } catch {
      // Redis not answering at start does not stop the start (readiness reports it, calls get 503). When it
      // answers again, the 'ready' handler takes a missing marker for a loss: closed, never open.
    }
    if (!usedBefore) await history.noteUse();
  }

  async claim(signature: string, binding: string, expiresAt: number): Promise<SignatureVerdict> {
    const ttlMs = Math.max(1000, expiresAt - this.now());
    // The record starts with the signed timestamp (`signatureRecord` in http/surface/replay-records.ts); a record
    // without one counts as signed at 0, refused whenever the record was lost.
    const signedAt = Number.parseInt(signature, 10) || 0;
    const key = this.prefix + signature;
    const [outcome, stored] = await this.script(key, this.marker, binding, ttlMs, signedAt, LOST_RECORD_MARGIN_MS);
    if (outcome === 2) throw new ReplayRecordLost();
    return outcome === 0 ? 'first' : verdict(stored, binding);
  }

  async purge(): Promise<number> {
    return 0;
  }
}
