import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '../clock/clock';
import type { OperatorService } from '../operators/operators';
import { afterCommit } from '../observability/instrumented-db';
import { skipLocked, type Database } from '../store/database';
import type { EndpointRow, WebhookEndpointService } from './endpoints';
import { envelope, marks, writeOutcomes, type Claimed, type Decided, type Outcome } from './outcomes';
import { WebhookSender, type SigningMaterial } from './sender';
import type { Resolver } from '../outbound/url-safety';

export interface DispatcherOptions {
  db: Database;
  clock: Clock;
  logger: Logger;
  endpoints: WebhookEndpointService;
  operators: OperatorService;
  /** Delay before each attempt: entry 0 for the first (normally 0), entry n after attempt n failed. Its length is the number of attempts. */
  retryScheduleMs: readonly number[];
  timeoutMs: number;
  allowPrivateTargets: boolean;
  /** A receiver's reply larger than this fails the attempt. */
  maxResponseBytes?: number;
  /** Connect-time resolution; injectable so tests need no DNS. */
  resolve?: Resolver;
  pollIntervalMs: number;
  /** Deliveries claimed per transaction. */
  batchSize?: number;
  /** Sends in flight at once, across all endpoints. */
  maxInFlight?: number;
  /** How long a claim keeps other workers away; must outlast a send. */
  leaseMs?: number;
  /** Jitter source, injectable for tests. */
  random?: () => number;
}

interface ClaimRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  attempts: number;
  claimed_until: number | null;
}

interface EventRow {
  id: string;
  type: string;
  created_at: number;
  livemode: number;
  data: string;
}

type Material = (SigningMaterial & { enabled: boolean }) | null;

const MATERIAL_TTL_MS = 1000;
const LOST_ATTEMPT = 'outcome unknown: the worker stopped before it recorded the answer';

/**
 * Delivers the webhook outbox. A claim loop takes due deliveries in batches, in one short
 * transaction each (FOR UPDATE SKIP LOCKED on PostgreSQL, so workers in other processes take other
 * rows; the lease in `claimed_until` keeps them away while a send is in flight), and starts their
 * sends at once over keep-alive connections, up to `maxInFlight`. Each answer joins a queue that
 * is written in batches, one transaction per batch, so a slow endpoint holds only its own sends.
 *
 * A disabled operator's deliveries are held: not claimed, their attempts untouched, still pending,
 * and sent once the operator is enabled again.
 *
 * The attempt counter moves at claim time, so an attempt number is used once even if the worker
 * dies mid-send: the next claim finds the expired lease, logs that attempt as "outcome unknown"
 * and sends the next one.
 */
export class WebhookDispatcher {
  private readonly sender: WebhookSender;
  private readonly maxAttempts: number;
  private readonly batchSize: number;
  private readonly maxInFlight: number;
  private readonly leaseMs: number;
  private readonly random: () => number;
  private readonly material = new Map<string, { at: number; value: Material }>();
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private waiters: (() => void)[] = [];
  private sleeper: { handle: TimerHandle; wake: () => void } | null = null;
  private finished: Outcome[] = [];
  private flushing: Promise<void> | null = null;

  constructor(private readonly o: DispatcherOptions) {
    if (o.retryScheduleMs.length === 0) throw new Error('the webhook retry schedule needs at least one entry');
    this.maxAttempts = o.retryScheduleMs.length;
    this.batchSize = o.batchSize ?? 200;
    this.maxInFlight = o.maxInFlight ?? 1000;
    this.leaseMs = o.leaseMs ?? o.timeoutMs * 2 + 5_000;
    this.random = o.random ?? Math.random;
    this.sender = new WebhookSender({
      timeoutMs: o.timeoutMs,
      allowPrivateTargets: o.allowPrivateTargets,
      maxResponseBytes: o.maxResponseBytes,
      resolve: o.resolve,
    });
  }

  async start(): Promise<void> {
    if (this.running) return;
    // A SQLite store belongs to one process, so a claim still open at boot was left by a process
    // that died mid-delivery: expire it now instead of waiting out its lease.
    if (this.o.db.dialect === 'sqlite') {
      const now = this.o.clock.now();
      await this.o.db.transaction((tx) =>
        tx.run(`UPDATE webhook_deliveries SET claimed_until = ? WHERE status = 'pending' AND claimed_until > ?`, [now, now]),
      );
    }
    this.running = true;
    this.loopDone = this.loop();
  }

  /** Stops claiming; sends already in flight finish and are recorded. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loopDone;
    await this.idle();
    await this.sender.close();
  }

  /** Claims and sends until nothing is due, and waits for every answer to be recorded (tests, benchmark). */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.claimAndSend();
      total += n;
      if (n === 0) {
        if (this.inFlight === 0 && !this.flushing && this.finished.length === 0) return total;
        // Something is still in flight or being written: wait for it to finish, then look again.
        await new Promise<void>((r) => this.waiters.push(r));
      }
    }
  }

  /** Forgets cached endpoint material so a change made in this process applies to the next send. */
  invalidate(endpointId?: string): void {
    if (endpointId) this.material.delete(endpointId);
    else this.material.clear();
  }

  /** Delay before the attempt after `attempt`: the schedule entry, ±10 % jitter, at least Retry-After. */
  nextDelay(attempt: number, retryAfterMs: number | null): number {
    const base = this.o.retryScheduleMs[Math.min(attempt, this.maxAttempts - 1)]!;
    const jittered = Math.round(base * (0.9 + 0.2 * this.random()));
    return Math.max(jittered, retryAfterMs ?? 0);
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      try {
        await this.capacity(Math.min(this.batchSize, this.maxInFlight));
        if (!this.running) break;
        claimed = await this.claimAndSend();
      } catch (error) {
        this.o.logger.error({ err: error }, 'webhook claim failed; retrying');
      }
      if (claimed === 0 && this.running) await this.sleep(this.o.pollIntervalMs);
    }
  }

  /** Resolves once at least `room` more sends may start (or the dispatcher is stopping). */
  private capacity(room: number): Promise<void> {
    if (this.maxInFlight - this.inFlight >= room || (!this.running && this.inFlight === 0)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private async idle(): Promise<void> {
    while (this.inFlight > 0) await new Promise<void>((r) => this.waiters.push(r));
    while (this.flushing) await this.flushing;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const handle = this.o.clock.schedule(ms, () => {
        this.sleeper = null;
        resolve();
      });
      this.sleeper = { handle, wake: resolve };
    });
  }

  private wake(): void {
    if (this.sleeper) {
      this.sleeper.handle.cancel();
      this.sleeper.wake();
      this.sleeper = null;
    }
    for (const w of this.waiters.splice(0)) w();
  }

  private async claimAndSend(): Promise<number> {
    const now = this.o.clock.now();
    const room = Math.max(1, Math.min(this.batchSize, this.maxInFlight - this.inFlight));
    const claimed = await this.claim(now, now + this.leaseMs, room);
    if (claimed.length === 0) return 0;
    const events = await this.events(claimed);
    const materials = new Map<string, Material>();
    for (const id of new Set(claimed.map((c) => c.endpointId))) materials.set(id, await this.materialFor(id));
    this.inFlight += claimed.length;
    for (const c of claimed) void this.sendOne(c, events.get(c.eventId), materials.get(c.endpointId) ?? null);
    return claimed.length;
  }

  private async sendOne(c: Claimed, event: EventRow | undefined, material: Material): Promise<void> {
    const sentAt = this.o.clock.now();
    try {
      let outcome: Outcome = { c, result: null, sentAt };
      if (event && material && material.enabled) {
        const delivery = { deliveryId: c.id, eventId: event.id, eventType: event.type, attempt: c.attempt, body: envelope(event) };
        outcome = { c, result: await this.sender.send(material, delivery, sentAt), sentAt };
      }
      this.finished.push(outcome);
    } catch (error) {
      this.o.logger.error({ err: error, delivery: c.id }, 'webhook send failed unexpectedly; the lease will expire and it will be retried');
    } finally {
      this.inFlight--;
      this.flush();
      for (const w of this.waiters.splice(0)) w();
    }
  }

  /** Writes queued outcomes; outcomes that arrive during a write are taken by the next one. */
  private flush(): void {
    if (this.flushing || this.finished.length === 0) return;
    const batch = this.finished.splice(0, 1000);
    this.flushing = this.record(batch)
      .catch((error) => {
        // The claims stay in place: when their lease ends these attempts are logged as unknown and retried.
        this.o.logger.error({ err: error, deliveries: batch.length }, 'could not record webhook attempts');
      })
      .finally(() => {
        this.flushing = null;
        this.flush();
        for (const w of this.waiters.splice(0)) w();
      });
  }

  private async record(batch: Outcome[]): Promise<void> {
    const now = this.o.clock.now();
    const d: Decided = { delivered: [], retry: [], dead: [], cancelled: [] };
    for (const o of batch) {
      if (!o.result) d.cancelled.push(o);
      else if (o.result.ok) d.delivered.push(o);
      else if (o.c.attempt >= this.maxAttempts) d.dead.push(o);
      else d.retry.push({ o, at: now + this.nextDelay(o.c.attempt, o.result.retryAfterMs) });
    }
    await this.o.db.transaction((tx) => {
      afterCommit(tx, (m) => {
        for (const outcome of ['delivered', 'dead', 'cancelled'] as const) m.webhookDeliveries.inc({ outcome }, d[outcome].length);
        m.webhookDeliveries.inc({ outcome: 'retry' }, d.retry.length);
      });
      return writeOutcomes(tx, d, now);
    });
    for (const { c, result } of d.dead) {
      this.o.logger.warn({ delivery: c.id, endpoint: c.endpointId, attempts: c.attempt, error: result!.error }, 'webhook delivery dead-lettered');
    }
  }

  private claim(now: number, claimUntil: number, limit: number): Promise<Claimed[]> {
    return this.o.db.transaction(async (tx) => {
      const rows = await tx.all<ClaimRow>(
        `SELECT id, event_id, endpoint_id, attempts, claimed_until FROM webhook_deliveries
         WHERE status = 'pending' AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
           AND NOT EXISTS (SELECT 1 FROM operators o
                           WHERE o.id = webhook_deliveries.operator_id AND o.status <> 'active')
         ORDER BY next_attempt_at LIMIT ?${skipLocked(tx)}`,
        [now, now, limit],
      );
      if (rows.length === 0) return [];
      const exhausted: string[] = [];
      const take: ClaimRow[] = [];
      for (const row of rows) {
        const used = Number(row.attempts);
        if (row.claimed_until !== null && used > 0) {
          await tx.run(
            `INSERT INTO webhook_attempts (id, delivery_id, attempt, started_at, latency_ms, status_code, error, response_excerpt)
             VALUES (?, ?, ?, ?, 0, NULL, ?, NULL) ON CONFLICT DO NOTHING`,
            [`wa_${randomUUID()}`, row.id, used, Number(row.claimed_until) - this.leaseMs, LOST_ATTEMPT],
          );
        }
        if (used >= this.maxAttempts) exhausted.push(row.id);
        else take.push(row);
      }
      if (exhausted.length > 0) {
        // Dead-lettered here, without a send: the worker that held the last attempt never recorded it.
        afterCommit(tx, (m) => m.webhookDeliveries.inc({ outcome: 'dead' }, exhausted.length));
        await tx.run(
          `UPDATE webhook_deliveries SET status = 'dead', dead_at = ?, claimed_until = NULL, next_attempt_at = NULL, last_error = ?
           WHERE id IN (${marks(exhausted)})`,
          [now, LOST_ATTEMPT, ...exhausted],
        );
      }
      if (take.length > 0) {
        await tx.run(`UPDATE webhook_deliveries SET claimed_until = ?, attempts = attempts + 1 WHERE id IN (${marks(take)})`, [
          claimUntil,
          ...take.map((r) => r.id),
        ]);
      }
      return take.map((r) => ({ id: r.id, eventId: r.event_id, endpointId: r.endpoint_id, attempt: Number(r.attempts) + 1, claimUntil }));
    });
  }

  private async events(claimed: Claimed[]): Promise<Map<string, EventRow>> {
    const ids = [...new Set(claimed.map((c) => c.eventId))];
    const rows = await this.o.db.all<EventRow>(
      `SELECT id, type, created_at, livemode, data FROM events WHERE id IN (${marks(ids)})`,
      ids,
    );
    return new Map(rows.map((r) => [r.id, r]));
  }

  private async materialFor(endpointId: string): Promise<Material> {
    const now = this.o.clock.now();
    const hit = this.material.get(endpointId);
    if (hit && now - hit.at >= 0 && now - hit.at < MATERIAL_TTL_MS) return hit.value;
    const row = await this.o.db.get<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ?', [endpointId]);
    let value: Material = null;
    if (row) {
      const surface = row.surface === 'B' ? 'B' : 'A';
      const operator = surface === 'B' ? await this.o.operators.credentialsById(row.operator_id) : null;
      value = {
        surface,
        url: row.url,
        enabled: Number(row.enabled) === 1,
        endpointSecrets: this.o.endpoints.signingSecrets(row, now),
        operatorKey: operator?.apiKey ?? null,
        operatorSecret: operator?.secrets[0] ?? null,
      };
    }
    if (this.material.size > 10_000) this.material.clear();
    this.material.set(endpointId, { at: now, value });
    return value;
  }
}
