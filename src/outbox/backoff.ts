/**
 * When an outbox row is attempted again after a failed attempt, and after how many attempts it is
 * given up (dead-lettered). The delay is a pure function of the attempt number, the schedule and the
 * receiver's Retry-After; time itself comes from the engine's injected clock.
 */
export interface Backoff {
  /** Attempts before a row is dead-lettered; `Infinity`: retried until it succeeds. */
  readonly maxAttempts: number;
  /** Delay (ms) before the attempt after attempt number `attempt` (1-based) failed. */
  delayAfter(attempt: number, retryAfterMs: number | null): number;
}

export interface ScheduleBackoffOptions {
  /**
   * `schedule`: as many attempts as the schedule has entries, then dead letter (webhooks).
   * `unbounded`: after the last entry, retried at the last interval forever (wallet settlements).
   */
  attempts: 'schedule' | 'unbounded';
  /**
   * ±fraction of random spread on each delay (webhooks: 0.1, documented in docs/webhooks.md) so a
   * receiver coming back is not hit by every retry at once. 0 (the default): exact delays.
   */
  jitter?: number;
  /** Where the spread comes from: injectable so tests get exact delays. */
  random?: () => number;
  /** Whether a receiver's Retry-After is honoured as a minimum delay. */
  honourRetryAfter?: boolean;
}

/** Entry 0 of a schedule is the delay before the first attempt; entry n the delay after attempt n failed. */
export function scheduleBackoff(scheduleMs: readonly number[], o: ScheduleBackoffOptions): Backoff {
  if (scheduleMs.length === 0) throw new Error('a retry schedule needs at least one entry');
  const jitter = o.jitter ?? 0;
  const random = o.random ?? Math.random;
  return {
    maxAttempts: o.attempts === 'schedule' ? scheduleMs.length : Number.POSITIVE_INFINITY,
    delayAfter(attempt, retryAfterMs) {
      const base = retryDelayMs(scheduleMs, attempt);
      const spread = jitter === 0 ? base : Math.round(base * (1 - jitter + 2 * jitter * random()));
      return o.honourRetryAfter ? Math.max(spread, retryAfterMs ?? 0) : spread;
    },
  };
}

/** Delay before attempt `attempt + 1`: the schedule's entry, then its last entry forever. */
export function retryDelayMs(schedule: readonly number[], attempt: number): number {
  if (schedule.length === 0) return 0;
  return schedule[Math.min(attempt, schedule.length - 1)]!;
}
