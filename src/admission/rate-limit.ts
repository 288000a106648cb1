import ipaddr from 'ipaddr.js';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Clock } from '../clock/clock';

export interface BucketLimits {
  refillPerSecond: number;
  burst: number;
}

export type RateDecision =
  | { allowed: true; remaining: number; limit: number; resetSeconds: number }
  | { allowed: false; retryAfterSeconds: number; limit: number; resetSeconds: number };

/** The per-operator request budget. In memory for one instance; one bucket per key in Redis for many. */
export interface OperatorRateLimiter {
  take(key: string, limits: BucketLimits): RateDecision | Promise<RateDecision>;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** What a caller is told, from the tokens left after this request's refill (and spend, when allowed). */
function decide(allowed: boolean, tokens: number, limits: BucketLimits): RateDecision {
  const before = allowed ? tokens + 1 : tokens;
  const resetSeconds = Math.ceil((limits.burst - before) / limits.refillPerSecond);
  if (allowed) return { allowed: true, remaining: Math.floor(tokens), limit: limits.burst, resetSeconds };
  const retryAfterSeconds = Math.max(1, Math.ceil((1 - tokens) / limits.refillPerSecond));
  return { allowed: false, retryAfterSeconds, limit: limits.burst, resetSeconds };
}

/**
 * Token bucket per API key: `burst` requests at once, refilled at `refillPerSecond`. Kept in memory:
 * right for a single instance; several instances use `RedisTokenBucketLimiter` (one bucket for all).
 */
export class TokenBucketLimiter implements OperatorRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly clock: Clock) {}

  take(key: string, limits: BucketLimits): RateDecision {
    const now = this.clock.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { tokens: limits.burst, updatedAt: now };
      this.buckets.set(key, bucket);
    } else if (now > bucket.updatedAt) {
      // Only forward time refills. A wall clock stepped back (NTP correcting a fast clock) must not
      // turn into a negative refill that empties the bucket for as long as the step was.
      const refill = ((now - bucket.updatedAt) * limits.refillPerSecond) / 1000;
      bucket.tokens = Math.min(limits.burst, bucket.tokens + refill);
      bucket.updatedAt = now;
    }
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    return decide(allowed, bucket.tokens, limits);
  }
}

// Refill and spend in one atomic step on the Redis server, so concurrent instances never both spend
// the last token. Time comes from the Redis server's clock, the one clock every instance shares: with
// the callers' clocks, one instance running ahead (say an hour, until NTP corrects it) would stamp
// the bucket in the future and no instance would refill it until that time came. TIME is allowed in
// a writing script since Redis 5 (effects replication). The key expires once a full bucket would
// have refilled, so idle operators cost no memory.
const TOKEN_BUCKET_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate / 1000)
  at = now
end
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(at))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return { allowed, tostring(tokens) }
`;

type BucketScript = (key: string, rate: number, burst: number) => Promise<[number, string]>;

/** The same token bucket, held in Redis: every instance spends from one bucket per operator. */
export class RedisTokenBucketLimiter implements OperatorRateLimiter {
  private readonly script: BucketScript;

  /** `_clock` is not read: the bucket runs on the Redis server's clock (see the script). */
  constructor(
    redis: Redis,
    _clock?: Clock,
    private readonly prefix = 'bucket:',
  ) {
    if (!('takeToken' in redis)) redis.defineCommand('takeToken', { numberOfKeys: 1, lua: TOKEN_BUCKET_SCRIPT });
    const command = (redis as unknown as { takeToken: BucketScript }).takeToken.bind(redis);
    this.script = command;
  }

  async take(key: string, limits: BucketLimits): Promise<RateDecision> {
    const { refillPerSecond, burst } = limits;
    const [allowed, tokens] = await this.script(this.prefix + key, refillPerSecond, burst);
    return decide(allowed === 1, Number(tokens), limits);
  }
}

/**
 * A memory limiter whose number of keys is capped: past `maxKeys`, the key touched longest ago is
 * dropped (only that one, never all of them), so a flood of distinct addresses or e-mails cannot
 * grow the process without bound. Redis-backed limiters need no cap: their keys expire in Redis.
 */
export class BoundedKeys {
  private readonly keys = new Map<string, true>();

  constructor(
    private readonly limiter: RateLimiterAbstract,
    private readonly maxKeys: number,
  ) {}

  touch(key: string): void {
    if (!(this.limiter instanceof RateLimiterMemory)) return;
    this.keys.delete(key);
    this.keys.set(key, true);
    while (this.keys.size > this.maxKeys) {
      const oldest = this.keys.keys().next().value as string;
      this.keys.delete(oldest);
      void this.limiter.delete(oldest);
    }
  }

  get size(): number {
    return this.keys.size;
  }
}

export interface FailureLimits {
  /** Failed attempts allowed per address within `windowSeconds`; the next ones are refused until it ends. */
  points: number;
  windowSeconds: number;
  /** Memory mode only: the most addresses tracked at once. */
  maxKeys?: number;
}

/** A rate-limiter-flexible limiter in Redis when configured, in memory otherwise. */
export function flexibleLimiter(
  redis: Redis | null,
  options: { keyPrefix: string; points: number; duration: number; blockDuration?: number },
): RateLimiterAbstract {
  if (!redis) return new RateLimiterMemory(options);
  return new RateLimiterRedis({ storeClient: redis, useRedisPackage: false, ...options });
}

/**
 * The client a failure is counted against: an IPv4 address as it is (IPv4-mapped IPv6 included), an
 * IPv6 address by its /64. A /64 is the smallest block a site is given, and every address in it is
 * the holder's to use: counted per address, one client would get a fresh budget (and a new entry)
 * with each of its 2^64 addresses. The key is written canonically (`2001:db8:0:7::/64`), so another
 * spelling of the same address is the same client.
 */
export function failureKey(address: string): string {
  // IPv4 (the common case) is not parsed: Node gives it in one spelling already.
  if (address.indexOf(':') === -1) return address;
  const zone = address.indexOf('%');
  const bare = zone === -1 ? address : address.slice(0, zone);
  if (!ipaddr.IPv6.isValid(bare)) return address;
  const ip = ipaddr.IPv6.parse(bare);
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString();
  const [a, b, c, d] = ip.parts;
  // The /64 prefix in ipaddr.js's canonical spelling (RFC 5952), e.g. 2001:db8:0:7::/64.
  return `${new ipaddr.IPv6([a!, b!, c!, d!, 0, 0, 0, 0]).toString()}/64`;
}

/**
 * Failed authentication per client (see `failureKey`) (unknown key, bad signature, stale timestamp, replay).
 * Counting happens only on failure, in Redis when configured so every instance sees one count; the
 * refusal of a blocked address is decided from a local note of "blocked until", so a request that
 * authenticates costs no extra round trip. Another instance learns of the block at that address's
 * next failure there.
 */
export class AuthFailureLimiter {
  private readonly limiter: RateLimiterAbstract;
  private readonly tracked: BoundedKeys;
  private readonly blockedUntil = new Map<string, number>();
  private readonly maxBlocked: number;

  constructor(
    redis: Redis | null,
    private readonly limits: FailureLimits,
  ) {
    this.limiter = flexibleLimiter(redis, {
      keyPrefix: 'authfail',
      points: limits.points,
      duration: limits.windowSeconds,
      blockDuration: limits.windowSeconds,
    });
    // docs/security.md promises at most 10,000 addresses per measure in memory.
    this.maxBlocked = limits.maxKeys ?? 10_000;
    this.tracked = new BoundedKeys(this.limiter, this.maxBlocked);
  }

  /** Seconds the address must wait, or 0 when it may try. */
  retryAfterSeconds(address: string): number {
    // Runs on every request: nothing blocked (the usual case) costs no key computation at all.
    if (this.blockedUntil.size === 0) return 0;
    const key = failureKey(address);
    const until = this.blockedUntil.get(key);
    if (until === undefined) return 0;
    const left = until - Date.now();
    if (left <= 0) {
      this.blockedUntil.delete(key);
      return 0;
    }
    return Math.ceil(left / 1000);
  }

  /** Counts one failure; returns the seconds to wait when this failure used up the budget (0 otherwise). */
  async noteFailure(client: string): Promise<number> {
    const address = failureKey(client);
    this.tracked.touch(address);
    let outcome: RateLimiterRes;
    try {
      outcome = await this.limiter.consume(address);
      if (outcome.remainingPoints > 0) return 0;
    } catch (refused) {
      if (!(refused instanceof RateLimiterRes)) throw refused;
      outcome = refused;
    }
    this.blockedUntil.delete(address);
    this.blockedUntil.set(address, Date.now() + outcome.msBeforeNext);
    while (this.blockedUntil.size > this.maxBlocked) {
      this.blockedUntil.delete(this.blockedUntil.keys().next().value as string);
    }
    return Math.max(1, Math.ceil(outcome.msBeforeNext / 1000));
  }
}
