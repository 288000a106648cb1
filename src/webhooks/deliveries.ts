import { timeOrderedId } from '../ids/time-ordered-id';
import type { Clock } from '../clock/clock';
import { DomainError } from '../errors/codes';
import {
  type Database,
  type PageCursor,
  type SqlExecutor,
  type WriteTransaction,
  nullableNumber,
} from '../store/database';
import { type AttemptLogRow, type DeliveryRow, deliveryRepository } from './delivery-repository';
import { endpointRepository } from './endpoint-repository';
import type { Scope, WebhookEndpointService } from './endpoints';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'dead', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryView {
  delivery_id: string;
  event_id: string;
  event_type: string;
  endpoint_id: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
  dead_at: number | null;
  resend_of: string | null;
}

/** One attempt of a delivery as the API shows it: the attempt log's row, field for field. */
export type AttemptView = AttemptLogRow;

function present(row: DeliveryRow): DeliveryView {
  return {
    delivery_id: row.id,
    event_id: row.event_id,
    event_type: row.type,
    endpoint_id: row.endpoint_id,
    status: row.status,
    attempts: Number(row.attempts),
    next_attempt_at: row.status === 'pending' ? nullableNumber(row.next_attempt_at) : null,
    last_status_code: nullableNumber(row.last_status_code),
    last_error: row.last_error,
    created_at: Number(row.created_at),
    delivered_at: nullableNumber(row.delivered_at),
    dead_at: nullableNumber(row.dead_at),
    resend_of: row.resend_of,
  };
}

export interface DeliveryFilter {
  endpointId?: string;
  status?: DeliveryStatus;
  /** Only deliveries created strictly before this instant (ms). */
  before?: number;
  /** The page cursor: the last delivery of the previous page; the page goes on after it. */
  startingAfter?: string;
  limit?: number;
}

let testSeq = 0;

/** Reading the delivery log, re-sending dead letters, and test pings: what the dashboard, API and CLI share. */
export class WebhookDeliveryService {
  /** Runs a write's one transaction as the store's own, unless the caller hands another (an idempotent retry's). */
  private readonly ownTransaction: WriteTransaction = (work) => this.db.transaction(work);

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly endpoints: WebhookEndpointService,
  ) {}

  async list(scope: Scope, filter: DeliveryFilter = {}): Promise<DeliveryView[]> {
    return (await this.page(scope, filter)).deliveries;
  }

  /**
   * A page of deliveries and whether another follows. One row past the page is read, so `hasMore` is
   * exact (false means the list ends here) without counting the log.
   */
  async page(scope: Scope, filter: DeliveryFilter = {}): Promise<{ deliveries: DeliveryView[]; hasMore: boolean }> {
    if (filter.endpointId) await this.knownEndpoint(scope, filter.endpointId);
    if (filter.status && !(DELIVERY_STATUSES as readonly string[]).includes(filter.status)) {
      throw new DomainError('VALIDATION_FAILED', `status must be one of ${DELIVERY_STATUSES.join(', ')}`);
    }
    const limit = Math.min(Math.max(filter.limit ?? 50, 1), 500);
    let after: PageCursor | undefined;
    if (filter.startingAfter !== undefined) {
      const last = await deliveryRepository.byId(this.db, scope, filter.startingAfter);
      if (!last) {
        // The wording every list of the API gives for a cursor it cannot continue from (docs/decisions.md, Lists).
        const whose = scope === null ? '' : ' of this operator';
        const what = `no delivery ${filter.startingAfter}${whose}`;
        const message = `starting_after: ${what} (give the last delivery_id of a page)`;
        throw new DomainError('VALIDATION_FAILED', message);
      }
      after = { createdAt: Number(last.created_at), id: last.id };
    }
    const rows = await deliveryRepository.list(this.db, {
      operatorId: scope,
      endpointId: filter.endpointId,
      status: filter.status,
      before: filter.before,
      after,
      limit: limit + 1,
    });
    return { deliveries: rows.slice(0, limit).map(present), hasMore: rows.length > limit };
  }

  async get(scope: Scope, id: string): Promise<DeliveryView & { attempt_log: AttemptView[] }> {
    const row = await this.row(scope, id);
    const attempts = await deliveryRepository.attempts(this.db, id);
    return {
      ...present(row),
      attempt_log: attempts.map((a) => ({
        attempt: Number(a.attempt),
        started_at: Number(a.started_at),
        latency_ms: Number(a.latency_ms),
        status_code: nullableNumber(a.status_code),
        error: a.error,
        response_excerpt: a.response_excerpt,
      })),
    };
  }

  /**
   * Queues the same event for the same endpoint again as a new delivery with a fresh budget of
   * attempts; the old one stays as it was, for the record. A delivery still being retried is left
   * to its schedule, and so is a re-send of the same event to the same endpoint that is still pending.
   */
  async resend(scope: Scope, id: string, inTx: WriteTransaction = this.ownTransaction): Promise<DeliveryView> {
    const old = await this.row(scope, id);
    if (old.status === 'pending') {
      throw new DomainError(
        'ILLEGAL_TRANSITION',
        `delivery ${id} is still pending (attempt ${old.attempts} made); ` +
          'it cannot be re-sent until it is delivered or dead',
      );
    }
    const endpoint = await this.endpoints.get(scope, old.endpoint_id);
    if (!endpoint.enabled)
      throw new DomainError('ILLEGAL_TRANSITION', `endpoint ${endpoint.id} is disabled; enable it before re-sending`);
    const now = this.clock.now();
    const newId = `dlv_${timeOrderedId(now)}`;
    // Answered with the delivery as queued, read in its own transaction: a read after it could
    // already show the dispatcher's first attempt.
    const queued = await inTx(async (tx) => {
      const { event_id: eventId, endpoint_id: endpointId, operator_id: operatorId } = old;
      // One re-send at a time: like a pending delivery, a queued re-send is still on its schedule.
      const since = Number(old.created_at);
      const pending = await deliveryRepository.pendingResendOf(tx, { eventId, endpointId, operatorId, since });
      if (pending !== undefined) {
        throw new DomainError(
          'ILLEGAL_TRANSITION',
          `event ${eventId} is already being re-sent to endpoint ${endpointId} (delivery ${pending}, still pending); ` +
            'it cannot be re-sent again until that one is delivered or dead',
        );
      }
      await deliveryRepository.requeue(tx, { id: newId, resendOf: old.id, eventId, endpointId, operatorId, now });
      return this.row(scope, newId, tx);
    });
    return present(queued);
  }

  /** A `webhook.test` event for one endpoint, signed and retried like any other. */
  async sendTest(
    scope: Scope,
    endpointId: string,
    inTx: WriteTransaction = this.ownTransaction,
  ): Promise<DeliveryView> {
    const endpoint = await this.endpoints.get(scope, endpointId);
    if (!endpoint.enabled)
      throw new DomainError('ILLEGAL_TRANSITION', `endpoint ${endpoint.id} is disabled; enable it first`);
    const now = this.clock.now();
    const eventId = `evt_${timeOrderedId(now)}`;
    const deliveryId = `dlv_${timeOrderedId(now)}`;
    const data = { endpoint_id: endpoint.id, message: 'test event: signatures and reachability check' };
    const queued = await inTx(async (tx) => {
      const seq = now * 1000 + (testSeq++ % 1000);
      const { id: endpointId, operatorId } = endpoint;
      await deliveryRepository.insertTestEvent(
        tx,
        { eventId, seq, deliveryId, endpointId, operatorId, data: JSON.stringify(data) },
        now,
      );
      return this.row(scope, deliveryId, tx);
    });
    return present(queued);
  }

  /**
   * An endpoint of this operator, or one it deleted: its deliveries stay in the log (the ones queued
   * when it went, cancelled), so filtering by its id still lists them. Otherwise not found, as for a
   * foreign id.
   */
  private async knownEndpoint(scope: Scope, endpointId: string): Promise<void> {
    if (await endpointRepository.byId(this.db, scope, endpointId)) return;
    if (await deliveryRepository.anyForEndpoint(this.db, scope, endpointId)) return;
    await this.endpoints.row(scope, endpointId);
  }

  private async row(scope: Scope, id: string, db: SqlExecutor = this.db): Promise<DeliveryRow> {
    const row = await deliveryRepository.byId(db, scope, id);
    if (!row)
      throw new DomainError(
        'DELIVERY_NOT_FOUND',
        `no webhook delivery ${id}${scope === null ? '' : ' for this operator'}`,
      );
    return row;
  }
}
