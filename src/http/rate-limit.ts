import type { Clock } from '../clock/clock';

export interface BucketLimits {
  refillPerSecond: number;
  burst: number;
}

export type RateDecision =
  | { allowed: true; remaining: number; limit: number; resetSeconds: number }
  | { allowed: false; retryAfterSeconds: number; limit: number; resetSeconds: number };

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * Token bucket per API key: `burst` requests at once, refilled at `refillPerSecond`. Kept in memory:
 * with several instances each enforces the limit on what it serves (see docs/decisions.md).
 */
export class TokenBucketLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly clock: Clock) {}

  take(key: string, limits: BucketLimits): RateDecision {
    const now = this.clock.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { tokens: limits.burst, updatedAt: now };
      this.buckets.set(key, bucket);
    } else {
      const refill = ((now - bucket.updatedAt) * limits.refillPerSecond) / 1000;
      bucket.tokens = Math.min(limits.burst, bucket.tokens + refill);
      bucket.updatedAt = now;
    }
    const resetSeconds = Math.ceil((limits.burst - bucket.tokens) / limits.refillPerSecond);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true, remaining: Math.floor(bucket.tokens), limit: limits.burst, resetSeconds };
    }
    const retryAfterSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / limits.refillPerSecond));
    return { allowed: false, retryAfterSeconds, limit: limits.burst, resetSeconds };
  }
}
