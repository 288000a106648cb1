import type { Logger } from 'pino';
import type { Clock } from '../clock/clock';
import type { OperatorService } from '../operators/operators';
import { scheduleBackoff, type Backoff } from '../outbox/backoff';
import { OutboxEngine, type AttemptResult, type OutboxSender } from '../outbox/engine';
import type { Database } from '../store/database';
import { WebhookDeliveryOutbox, type WebhookClaim } from './delivery-repository';
import type { WebhookEndpointService } from './endpoints';
import { WebhookSender, type SigningMaterial } from './sender';
import type { Resolver } from '../outbound/url-safety';
import { ATTEMPTS_PER_TARGET } from '../outbound/outbound-http';

export interface DispatcherOptions {
  db: Database;
  clock: Clock;
  logger: Logger;
  endpoints: WebhookEndpointService;
  operators: OperatorService;
  /**
   * Delay before each attempt: entry 0 for the first (normally 0), entry n after attempt n failed.
   * Its length is the number of attempts.
   */
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

type Material = (SigningMaterial & { enabled: boolean }) | null;

const MATERIAL_TTL_MS = 1000;

/** The envelope, assembled around the stored payload text so it is never re-serialised. */
export function envelope(e: {
  id: string;
  type: string;
  created_at: number;
  livemode?: number | boolean | null;
  data: string;
}): string {
  // livemode false: the event belongs to a sandbox (test-mode) operator; missing means a live row.
  const live = e.livemode === undefined || e.livemode === null || Number(e.livemode) === 1;
  const head = `{"id":${JSON.stringify(e.id)},"type":${JSON.stringify(e.type)},"created_at":${Number(e.created_at)}`;
  return `${head},"livemode":${live},"data":${e.data}}`;
}

/**
 * One attempt of one delivery: the endpoint's signing material (cached for a second, one lookup per
 * endpoint however many of its deliveries are in flight), the envelope, the signed POST.
 */
class DeliveryAttempts implements OutboxSender<WebhookClaim> {
  private sender: WebhookSender;
  private readonly material = new Map<string, { at: number; value: Promise<Material> }>();

  constructor(private readonly options: DispatcherOptions) {
    this.sender = this.newSender();
  }

  private newSender(): WebhookSender {
    const { timeoutMs, allowPrivateTargets, maxResponseBytes, resolve } = this.options;
    return new WebhookSender({ timeoutMs, allowPrivateTargets, maxResponseBytes, resolve });
  }

  async send(c: WebhookClaim, startedAt: number): Promise<Omit<AttemptResult, 'startedAt'> | null> {
    const material = await this.materialFor(c.endpointId);
    if (!c.event || !material || !material.enabled) return null;
    const e = c.event;
    const delivery = { deliveryId: c.id, eventId: e.id, eventType: e.type, attempt: c.attempt, body: envelope(e) };
    return this.sender.send(material, delivery, startedAt);
  }

  async close(): Promise<void> {
    const closing = this.sender;
    // Its keep-alive sockets go; a fresh agent (no sockets yet) serves a later start or drain.
    this.sender = this.newSender();
    await closing.close();
  }

  invalidate(endpointId?: string): void {
    if (endpointId) this.material.delete(endpointId);
    else this.material.clear();
  }

  private materialFor(endpointId: string): Promise<Material> {
    const now = this.options.clock.now();
    const hit = this.material.get(endpointId);
    if (hit && now - hit.at >= 0 && now - hit.at < MATERIAL_TTL_MS) return hit.value;
    const value = this.load(endpointId, now);
    if (this.material.size > 10_000) this.material.clear();
    this.material.set(endpointId, { at: now, value });
    // A failed lookup is not cached: the next attempt asks again.
    value.catch(() => this.material.get(endpointId)?.value === value && this.material.delete(endpointId));
    return value;
  }

  private async load(endpointId: string, now: number): Promise<Material> {
    const row = await this.options.endpoints.find(endpointId);
    if (!row) return null;
    const surface = row.surface === 'B' ? 'B' : 'A';
    const operator = surface === 'B' ? await this.options.operators.credentialsById(row.operator_id) : null;
    return {
      surface,
      url: row.url,
      enabled: Number(row.enabled) === 1,
      endpointSecrets: this.options.endpoints.signingSecrets(row, now),
      operatorKey: operator?.apiKey ?? null,
      operatorSecret: operator?.secrets[0] ?? null,
    };
  }
}

/**
 * Delivers the webhook outbox on the shared outbox engine (src/outbox): claims of 200, up to 1000
 * sends in flight over keep-alive connections, answers written in batches. A delivery has as many
 * attempts as the retry schedule has entries, each delay with ±10 % jitter and at least the
 * receiver's Retry-After, then it is dead-lettered.
 *
 * The attempt counter moves at claim time, so an attempt number is used once even if the worker
 * dies mid-send: the next claim finds the expired lease, logs that attempt as "outcome unknown"
 * and sends the next one.
 */
export class WebhookDispatcher {
  private readonly engine: OutboxEngine<WebhookClaim>;
  private readonly attempts: DeliveryAttempts;
  private readonly backoff: Backoff;

  constructor(options: DispatcherOptions) {
    if (options.retryScheduleMs.length === 0) throw new Error('the webhook retry schedule needs at least one entry');
    this.attempts = new DeliveryAttempts(options);
    this.backoff = scheduleBackoff(options.retryScheduleMs, {
      attempts: 'schedule',
      jitter: 0.1,
      random: options.random,
      honourRetryAfter: true,
    });
    this.engine = new OutboxEngine({
      name: 'webhook delivery',
      logFields: (c) => ({ delivery: c.id, endpoint: c.endpointId }),
      clock: options.clock,
      logger: options.logger,
      repository: new WebhookDeliveryOutbox(options.db),
      sender: this.attempts,
      backoff: this.backoff,
      leaseMs: options.leaseMs ?? options.timeoutMs * 2 + 5_000,
      pollIntervalMs: options.pollIntervalMs,
      batchSize: options.batchSize ?? 200,
      maxInFlight: options.maxInFlight ?? 1000,
      maxInFlightPerTarget: ATTEMPTS_PER_TARGET,
      releaseLeasesAtStart: options.db.dialect === 'sqlite',
    });
  }

  start(): Promise<void> {
    return this.engine.start();
  }

  /** Stops claiming; sends already in flight finish and are recorded (by `deadline`, see OutboxEngine.stop). */
  stop(deadline: number | null = null): Promise<void> {
    return this.engine.stop(deadline);
  }

  /** Claims and sends until nothing is due, and waits for every answer to be recorded (tests, benchmark). */
  drain(): Promise<number> {
    return this.engine.drain();
  }

  /** Forgets cached endpoint material so a change made in this process applies to the next send. */
  invalidate(endpointId?: string): void {
    this.attempts.invalidate(endpointId);
  }

  /** Delay before the attempt after `attempt`: the schedule entry, ±10 % jitter, at least Retry-After. */
  nextDelay(attempt: number, retryAfterMs: number | null): number {
    return this.backoff.delayAfter(attempt, retryAfterMs);
  }
}
