/**
 * Time is injected everywhere so the engines can be driven by tests without sleeping.
 * A Clock both tells the time and schedules callbacks against that same time.
 */
export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Runs `fn` once, `ms` milliseconds from now (on this clock's time). */
  schedule(ms: number, fn: () => void): TimerHandle;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  schedule(ms, fn) {
    const t = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(t) };
  },
};

interface PendingTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** A manual clock for tests: time moves only when `advance` is called, firing due timers in order. */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: PendingTimer[] = [];

  constructor(start = 1_700_000_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  schedule(ms: number, fn: () => void): TimerHandle {
    const timer: PendingTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Moves time forward by `ms`, running every timer that falls due, each at its own instant. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (let next = this.popDue(target); next; next = this.popDue(target)) next.fn();
    this.current = target;
  }

  /** Like advance, but lets promise callbacks run between timers (for code that awaits the store). */
  async advanceAsync(ms: number, settle: () => Promise<void> = flushMicrotasks): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (let next = this.popDue(target); next; next = this.popDue(target)) {
      next.fn();
      await settle();
    }
    this.current = target;
  }

  pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Removes the earliest timer due by `limit` and moves the clock to its instant. */
  private popDue(limit: number): PendingTimer | undefined {
    const next = this.nextDue(limit);
    if (!next) return undefined;
    this.current = next.at;
    this.timers = this.timers.filter((t) => t !== next);
    return next;
  }

  private nextDue(limit: number): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const t of this.timers) {
      if (t.cancelled || t.at > limit) continue;
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}

/**
 * Whether `work` settles before `deadline` (a `performance.now()` instant: real time, for shutdown
 * grace periods, which no fake game clock should stretch). `work` itself goes on either way.
 */
export async function settlesBy(work: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => {
    timer = setTimeout(() => r(false), Math.max(0, deadline - performance.now()));
  });
  try {
    return await Promise.race([work.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
