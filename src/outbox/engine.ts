import type { Logger } from 'pino';
import { type Clock, settlesBy, type TimerHandle } from '../clock/clock';
import type { Backoff } from './backoff';

/** Logged in place of an attempt whose worker died (or lost its lease) before it recorded the answer. */
export const LOST_ATTEMPT = 'outcome unknown: the worker stopped before it recorded the answer';

/** A row this worker claimed. `leaseUntil` is the lease it holds and proves ownership by. */
export interface OutboxClaim {
  id: string;
  /**
   * Whom the attempt calls (a webhook endpoint, an operator's wallet): the claims of one target share
   * its limit of attempts in flight, so a target that never answers holds only its own share.
   */
  target: string;
  /** The number of the attempt this claim makes (1-based), fixed at claim time: never sent twice. */
  attempt: number;
  leaseUntil: number;
}

/** One attempt's answer, as the attempt log stores it. */
export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  /** Clock time the attempt started. */
  startedAt: number;
  latencyMs: number;
  error: string | null;
  responseExcerpt: string | null;
  /** Retry-After from the receiver, in ms, when it gave one. */
  retryAfterMs: number | null;
}

export type Outcome<C extends OutboxClaim> =
  | { kind: 'delivered'; claim: C; result: AttemptResult }
  | { kind: 'retry'; claim: C; result: AttemptResult; at: number }
  | { kind: 'dead'; claim: C; result: AttemptResult }
  /** Nothing was sent: the row's target no longer exists or is switched off (the sender said so). */
  | { kind: 'cancelled'; claim: C };

export interface ClaimQuery {
  now: number;
  /** The lease each claimed row gets: now + leaseMs. */
  leaseUntil: number;
  leaseMs: number;
  limit: number;
  /** A row with this many attempts spent is dead-lettered instead of claimed (Infinity: never). */
  maxAttempts: number;
  /** This worker's attempts in flight, per target (only targets with at least one). */
  inFlightByTarget: ReadonlyMap<string, number>;
  /** Attempts one target may have in flight on this worker at once. */
  perTargetLimit: number;
}

/**
 * A claim's share-out among targets, for the repositories: the targets to leave out of the query
 * (already at their limit), then `take` for each candidate row in due order, which says whether the
 * row fits in its target's remaining room. Rows that do not fit stay as they are, unclaimed.
 */
export class TargetBudget {
  private readonly used: Map<string, number>;
  /** The targets with no room left: the claim's query leaves their rows out. */
  readonly full: readonly string[];

  constructor(private readonly q: Pick<ClaimQuery, 'inFlightByTarget' | 'perTargetLimit'>) {
    this.used = new Map(q.inFlightByTarget);
    this.full = [...this.used].filter(([, n]) => n >= q.perTargetLimit).map(([target]) => target);
  }

  take(target: string): boolean {
    const n = this.used.get(target) ?? 0;
    if (n >= this.q.perTargetLimit) return false;
    this.used.set(target, n + 1);
    return true;
  }
}

/** The SQL side of one outbox: its own table and columns, behind these calls. */
export interface OutboxRepository<C extends OutboxClaim> {
  /**
   * Claims up to `limit` due rows for one attempt each, in one short transaction (FOR UPDATE SKIP
   * LOCKED on PostgreSQL), each leased until `leaseUntil` with its attempt number fixed. A row whose
   * previous lease ran out without an answer logs that attempt as LOST_ATTEMPT, so no attempt number
   * is used twice; one whose attempts are already `maxAttempts` is dead-lettered instead of claimed.
   */
  claim(q: ClaimQuery): Promise<C[]>;
  /** Writes the outcomes in one transaction; each write is conditional on the claim's lease. */
  record(outcomes: readonly Outcome<C>[], now: number): Promise<void>;
  /** Ends every open lease now (a SQLite store has one process: open claims at boot belong to a dead one). */
  releaseLeases(now: number): Promise<void>;
}

export interface OutboxSender<C extends OutboxClaim> {
  /** One attempt. null: nothing to send (cancelled). May throw: the lease then runs out and the row is retried. */
  send(claim: C, startedAt: number): Promise<Omit<AttemptResult, 'startedAt'> | null>;
  /** Stops reusing connections; the sender must still work for a later start. */
  close(): Promise<void>;
}

export interface OutboxEngineOptions<C extends OutboxClaim> {
  /** For logs: what one row is ('webhook delivery', 'wallet settlement'). */
  name: string;
  /** For logs: the fields that identify a claimed row (default: its id). */
  logFields?: (claim: C) => Record<string, unknown>;
  clock: Clock;
  logger: Logger;
  repository: OutboxRepository<C>;
  sender: OutboxSender<C>;
  backoff: Backoff;
  /** How long a claim keeps other workers away; must outlast an attempt and its recording. */
  leaseMs: number;
  pollIntervalMs: number;
  /** Rows claimed per transaction. */
  batchSize: number;
  /** Attempts in flight at once. */
  maxInFlight: number;
  /** Attempts in flight at once for one target (see OutboxClaim.target); at most maxInFlight. */
  maxInFlightPerTarget: number;
  /** SQLite: one process owns the store, so leases still open at start are released. */
  releaseLeasesAtStart: boolean;
}

const RECORD_BATCH = 1000;

/**
 * One outbox worker, whatever it sends. A claim loop takes due rows in batches (a lease each, so
 * workers in other processes take other rows, and a crashed worker's rows are retaken when the lease
 * runs out), starts their attempts at once up to `maxInFlight`, and queues each answer; answers are
 * written in batches, one transaction per batch, so a slow receiver holds only its own attempts.
 * A failed attempt is due again after the backoff's delay, and dead-lettered after the last attempt.
 */
export class OutboxEngine<C extends OutboxClaim> {
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private readonly inFlightByTarget = new Map<string, number>();
  private waiters: (() => void)[] = [];
  private sleeper: { handle: TimerHandle; wake: () => void } | null = null;
  /** The targets at their limit of attempts when the last claim ran: rows of theirs may be waiting. */
  private saturated: Set<string> | null = null;
  private finished: { claim: C; result: AttemptResult | null }[] = [];
  private flushing: Promise<void> | null = null;
  /** Batches of answers written so far: a drain that claimed nothing while one was written looks again. */
  private recordedBatches = 0;
  /** Attempts in flight, with when each started; an attempt given up at shutdown leaves this set. */
  private readonly pending = new Map<C, number>();

  constructor(private readonly o: OutboxEngineOptions<C>) {
    if (o.maxInFlight < 1 || o.batchSize < 1 || o.maxInFlightPerTarget < 1) {
      throw new Error(`${o.name} outbox: batchSize, maxInFlight and maxInFlightPerTarget must be at least 1`);
    }
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      if (this.o.releaseLeasesAtStart) await this.o.repository.releaseLeases(this.o.clock.now());
    } catch (error) {
      this.running = false;
      throw error;
    }
    this.loopDone = this.loop();
  }

  /**
   * Stops claiming; attempts already in flight finish and are recorded before this resolves. Past
   * `deadline` (performance.now() time; a shutdown's grace period) those still waiting for an answer
   * are given up: each is recorded as an attempt of unknown outcome, due again at once, which ends its
   * lease now, so another instance (or this one restarted) sends it again without waiting for the lease
   * to run out, and a receiver or wallet that never answers cannot hold the process past its grace.
   */
  async stop(deadline: number | null = null): Promise<void> {
    this.running = false;
    this.wake();
    await this.loopDone;
    if (deadline === null || (await settlesBy(this.idle(), deadline))) {
      await this.idle();
      await this.o.sender.close();
      return;
    }
    await this.abandonInFlight();
    // Closing waits for the requests still open, which may never answer: let them go with the process.
    void this.o.sender.close().catch(() => {});
  }

  /** Records every attempt still waiting for its answer as lost and due now, ending its lease. */
  private async abandonInFlight(): Promise<void> {
    while (this.flushing) await this.flushing;
    const now = this.o.clock.now();
    const outcomes: Outcome<C>[] = this.finished.splice(0).map(({ claim, result }) => this.decide(claim, result, now));
    for (const [claim, startedAt] of this.pending) {
      const result: AttemptResult = {
        ok: false,
        statusCode: null,
        startedAt,
        latencyMs: Math.max(0, now - startedAt),
        error: LOST_ATTEMPT,
        responseExcerpt: null,
        retryAfterMs: null,
      };
      outcomes.push(
        claim.attempt >= this.o.backoff.maxAttempts
          ? { kind: 'dead', claim, result }
          : { kind: 'retry', claim, result, at: now },
      );
    }
    this.pending.clear();
    if (outcomes.length === 0) return;
    try {
      await this.o.repository.record(outcomes, now);
    } catch (error) {
      this.o.logger.error({ err: error, rows: outcomes.length }, `could not release ${this.o.name} attempts`);
      return;
    }
    this.o.logger.warn(
      { rows: outcomes.length },
      `${this.o.name}: gave up waiting for answers at shutdown; due again at once`,
    );
  }

  /**
   * Claims and attempts until nothing is due, and waits for every answer to be recorded (tests,
   * benchmark, one pass of a worker). `maxClaims` bounds the claims, so a schedule of zero delays
   * cannot keep it going. Returns the number of attempts made.
   */
  async drain(maxClaims = Number.POSITIVE_INFINITY): Promise<number> {
    let total = 0;
    for (let claims = 0; claims < maxClaims; ) {
      await this.capacity(1);
      const recordedBefore = this.recordedBatches;
      const n = await this.claimAndSend();
      total += n;
      if (n > 0) {
        claims++;
        continue;
      }
      if (this.inFlight === 0 && !this.flushing && this.finished.length === 0) {
        // An answer written while the claim ran may have made its row due again (a retry now, a zero
        // delay): its wake-up came before this drain was waiting, so look once more.
        if (this.recordedBatches !== recordedBefore) continue;
        return total;
      }
      // Something is still in flight or being written: look again once a written answer may have made
      // a row due again, or a target that was at its limit has room, or all is done.
      await this.until(
        () =>
          this.recordedBatches !== recordedBefore ||
          this.roomOnSaturatedTarget() ||
          (this.inFlight === 0 && !this.flushing && this.finished.length === 0),
      );
    }
    await this.idle();
    return total;
  }

  /** Ends the loop's sleep between polls. */
  private wakeSleeper(): void {
    if (this.sleeper) {
      this.sleeper.handle.cancel();
      this.sleeper.wake();
      this.sleeper = null;
    }
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      let room = 0;
      try {
        await this.capacity(this.o.batchSize);
        if (!this.running) break;
        room = this.claimRoom();
        claimed = await this.claimAndSend();
      } catch (error) {
        this.o.logger.error({ err: error }, `${this.o.name} claim failed; retrying`);
        this.saturated = null;
      }
      if (!this.running || (claimed > 0 && claimed === room)) continue;
      // A short claim either found nothing more due (look again after the poll interval) or left rows
      // behind for targets at their limit: those go out as soon as one of the targets has room again,
      // not a poll interval later, so a fast receiver is never left idle between claims.
      if (this.saturated) await this.sleep(this.o.pollIntervalMs, () => this.roomOnSaturatedTarget());
      else await this.sleep(this.o.pollIntervalMs);
    }
  }

  /**
   * The targets a claim found at their limit (it left their rows out, or stopped taking them), or null
   * when none was, and so the claim took all that was due. Read from the claim's own view of the
   * attempts in flight: some of those may have ended while it ran, and their rows must still be looked for.
   */
  private noteSaturatedTargets(budget: ReadonlyMap<string, number>): void {
    let full: Set<string> | null = null;
    for (const [target, n] of budget) {
      if (n >= this.o.maxInFlightPerTarget) (full ??= new Set()).add(target);
    }
    this.saturated = full;
  }

  /**
   * Whether a target that was at its limit has room for a claim worth its transaction: a quarter of
   * its share (at least one), so a receiver that answers at once gets its rows in a few claims per
   * round trip rather than one claim per answer.
   */
  private roomOnSaturatedTarget(): boolean {
    if (!this.saturated) return false;
    const worth = Math.max(1, Math.floor(this.o.maxInFlightPerTarget / 4));
    if (this.o.maxInFlight - this.inFlight < Math.min(worth, this.o.maxInFlight)) return false;
    for (const target of this.saturated) {
      if (this.o.maxInFlightPerTarget - (this.inFlightByTarget.get(target) ?? 0) >= worth) return true;
    }
    return false;
  }

  /** Resolves once at least `room` more attempts may start (never more than maxInFlight at once). */
  private async capacity(room: number): Promise<void> {
    const needed = Math.min(room, this.o.maxInFlight);
    while (this.o.maxInFlight - this.inFlight < needed) await new Promise<void>((r) => this.waiters.push(r));
  }

  private async until(condition: () => boolean): Promise<void> {
    while (!condition()) await new Promise<void>((r) => this.waiters.push(r));
  }

  private async idle(): Promise<void> {
    while (this.inFlight > 0 || this.finished.length > 0) await new Promise<void>((r) => this.waiters.push(r));
    while (this.flushing) await this.flushing;
  }

  /** Waits `ms`, or less: until `stop` wakes it, or until `until` holds after an attempt finished. */
  private sleep(ms: number, until?: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      let done = false;
      const end = (): void => {
        if (done) return;
        done = true;
        this.sleeper = null;
        handle.cancel();
        resolve();
      };
      const handle = this.o.clock.schedule(ms, end);
      this.sleeper = { handle, wake: end };
      if (!until) return;
      const check = (): void => {
        if (done) return;
        if (until()) end();
        else this.waiters.push(check);
      };
      check();
    });
  }

  private wake(): void {
    this.wakeSleeper();
    this.notify();
  }

  private notify(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private claimRoom(): number {
    return Math.min(this.o.batchSize, this.o.maxInFlight - this.inFlight);
  }

  private async claimAndSend(): Promise<number> {
    const now = this.o.clock.now();
    const room = this.claimRoom();
    if (room <= 0) return 0;
    // The claim's view of the attempts in flight, kept apart from the live counts that change meanwhile.
    const budget = new Map(this.inFlightByTarget);
    const claimed = await this.o.repository.claim({
      now,
      leaseUntil: now + this.o.leaseMs,
      leaseMs: this.o.leaseMs,
      limit: room,
      maxAttempts: this.o.backoff.maxAttempts,
      inFlightByTarget: budget,
      perTargetLimit: this.o.maxInFlightPerTarget,
    });
    this.inFlight += claimed.length;
    for (const c of claimed) {
      this.inFlightByTarget.set(c.target, (this.inFlightByTarget.get(c.target) ?? 0) + 1);
      void this.attempt(c);
    }
    for (const c of claimed) budget.set(c.target, (budget.get(c.target) ?? 0) + 1);
    this.noteSaturatedTargets(budget);
    return claimed.length;
  }

  private async attempt(claim: C): Promise<void> {
    const startedAt = this.o.clock.now();
    this.pending.set(claim, startedAt);
    try {
      const result = await this.o.sender.send(claim, startedAt);
      // Given up at shutdown (abandonInFlight) and recorded already: a late answer is not written.
      if (!this.pending.delete(claim)) return;
      // The far end's text goes into the attempt log: PostgreSQL text cannot hold a NUL, and one such
      // answer would fail the transaction that records every answer of its batch, for every operator.
      const stored = result && {
        ...result,
        startedAt,
        error: storable(result.error),
        responseExcerpt: storable(result.responseExcerpt),
      };
      this.finished.push({ claim, result: stored });
    } catch (error) {
      if (!this.pending.delete(claim)) return;
      this.o.logger.error(
        { err: error, ...this.fields(claim) },
        `${this.o.name} attempt failed unexpectedly; its lease will run out and it will be retried`,
      );
    } finally {
      this.inFlight--;
      const left = (this.inFlightByTarget.get(claim.target) ?? 1) - 1;
      if (left > 0) this.inFlightByTarget.set(claim.target, left);
      else this.inFlightByTarget.delete(claim.target);
      this.flush();
      this.notify();
    }
  }

  /** Writes queued answers; answers that arrive during a write are taken by the next one. */
  private flush(): void {
    if (this.flushing || this.finished.length === 0) return;
    const batch = this.finished.splice(0, RECORD_BATCH);
    this.flushing = this.record(batch)
      .catch((error) => {
        // The claims stay in place: when their leases end these attempts are logged as lost and retried.
        this.o.logger.error({ err: error, rows: batch.length }, `could not record ${this.o.name} attempts`);
      })
      .finally(() => {
        this.flushing = null;
        this.flush();
        this.notify();
      });
  }

  private async record(batch: { claim: C; result: AttemptResult | null }[]): Promise<void> {
    const now = this.o.clock.now();
    const outcomes = batch.map(({ claim, result }) => this.decide(claim, result, now));
    await this.o.repository.record(outcomes, now);
    this.recordedBatches++;
    for (const o of outcomes) {
      if (o.kind === 'dead') {
        this.o.logger.warn(
          { ...this.fields(o.claim), attempts: o.claim.attempt, error: o.result.error },
          `${this.o.name} dead-lettered`,
        );
      }
    }
  }

  private fields(claim: C): Record<string, unknown> {
    return this.o.logFields ? this.o.logFields(claim) : { id: claim.id };
  }

  private decide(claim: C, result: AttemptResult | null, now: number): Outcome<C> {
    if (!result) return { kind: 'cancelled', claim };
    if (result.ok) return { kind: 'delivered', claim, result };
    if (claim.attempt >= this.o.backoff.maxAttempts) return { kind: 'dead', claim, result };
    return { kind: 'retry', claim, result, at: now + this.o.backoff.delayAfter(claim.attempt, result.retryAfterMs) };
  }
}

/** NUL characters replaced by U+FFFD, the replacement character, so that any store can hold the text. */
function storable(text: string | null): string | null {
  return text === null || !text.includes('\u0000') ? text : text.replaceAll('\u0000', '\uFFFD');
}
