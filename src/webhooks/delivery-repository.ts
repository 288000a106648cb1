import { timeOrderedId } from '../ids/time-ordered-id';
import { randomUUID } from 'node:crypto';
import { afterCommit } from '../observability/instrumented-db';
import {
  LOST_ATTEMPT,
  TargetBudget,
  type ClaimQuery,
  type Outcome,
  type OutboxClaim,
  type OutboxRepository,
} from '../outbox/engine';
import {
  continueAfter,
  forUpdate,
  nullableNumber,
  skipLocked,
  type Database,
  type PageCursor,
  type RunResult,
  type SqlExecutor,
  type SqlParam,
  type SyncExecutor,
} from '../store/database';
import type { OperatorEventRow } from './event-rows';

/** The event a delivery carries, as stored. */
export interface EventRow {
  id: string;
  type: string;
  created_at: number;
  livemode: number;
  data: string;
}

/** A delivery this worker claimed, with its event (undefined: the event row is gone). */
export interface WebhookClaim extends OutboxClaim {
  eventId: string;
  endpointId: string;
  event: EventRow | undefined;
}

interface ClaimRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  attempts: number;
  claimed_until: number | null;
}

const marks = (items: readonly unknown[]): string => items.map(() => '?').join(', ');

const ATTEMPT_COLUMNS = 8;
const ROWS_PER_INSERT = 200;
const CANCELLED = 'the endpoint or event no longer exists, or the endpoint is disabled';

/**
 * The webhook outbox's SQL: `webhook_deliveries` (one row per event and endpoint) and its attempt log
 * `webhook_attempts`. A disabled operator's deliveries are held: not claimed, their attempts
 * untouched, still pending, and sent once the operator is enabled again.
 */
export class WebhookDeliveryOutbox implements OutboxRepository<WebhookClaim> {
  constructor(private readonly db: Database) {}

  async releaseLeases(now: number): Promise<void> {
    await this.db.transaction((tx) =>
      tx.run(`UPDATE webhook_deliveries SET claimed_until = ? WHERE status = 'pending' AND claimed_until > ?`, [
        now,
        now,
      ]),
    );
  }

  async claim(q: ClaimQuery): Promise<WebhookClaim[]> {
    const { now, leaseUntil, leaseMs, limit, maxAttempts } = q;
    // The target is the endpoint: one that never answers holds only its own share of the sends.
    const budget = new TargetBudget(q);
    const full = budget.full.length === 0 ? '' : ` AND endpoint_id NOT IN (${marks(budget.full)})`;
    const rows = await this.db.transaction(async (tx) => {
      const due = await tx.all<ClaimRow>(
        `SELECT id, event_id, endpoint_id, attempts, claimed_until FROM webhook_deliveries
         WHERE status = 'pending' AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
           AND NOT EXISTS (SELECT 1 FROM operators o
                           WHERE o.id = webhook_deliveries.operator_id AND o.status <> 'active')${full}
         ORDER BY next_attempt_at LIMIT ?${skipLocked(tx)}`,
        [now, now, ...budget.full, limit],
      );
      if (due.length === 0) return [];
      const exhausted: string[] = [];
      const take: ClaimRow[] = [];
      for (const row of due) {
        const used = Number(row.attempts);
        // Over its endpoint's room: left untouched for a later claim (one that is exhausted sends nothing).
        if (used < maxAttempts && !budget.take(row.endpoint_id)) continue;
        if (row.claimed_until !== null && used > 0) {
          await tx.run(
            `INSERT INTO webhook_attempts
               (id, delivery_id, attempt, started_at, latency_ms, status_code, error, response_excerpt)
             VALUES (?, ?, ?, ?, 0, NULL, ?, NULL) ON CONFLICT DO NOTHING`,
            [`wa_${randomUUID()}`, row.id, used, Number(row.claimed_until) - leaseMs, LOST_ATTEMPT],
          );
        }
        if (used >= maxAttempts) exhausted.push(row.id);
        else take.push(row);
      }
      if (exhausted.length > 0) {
        // Dead-lettered here, without a send: the worker that held the last attempt never recorded it.
        // Counted like record()'s outcomes: a sandbox's deliveries (events with livemode 0) stay out of
        // the live metrics. Read only here, where a worker died holding a last attempt.
        const live = await tx.get<{ n: number | string }>(
          `SELECT COUNT(*) AS n FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
           WHERE d.id IN (${marks(exhausted)}) AND e.livemode = 1`,
          exhausted,
        );
        const dead = Number(live?.n ?? 0);
        if (dead > 0) afterCommit(tx, (m) => m.webhookDeliveries.inc({ outcome: 'dead' }, dead));
        await tx.run(
          `UPDATE webhook_deliveries
           SET status = 'dead', dead_at = ?, claimed_until = NULL, next_attempt_at = NULL, last_error = ?
           WHERE id IN (${marks(exhausted)})`,
          [now, LOST_ATTEMPT, ...exhausted],
        );
      }
      if (take.length > 0) {
        await tx.run(
          `UPDATE webhook_deliveries SET claimed_until = ?, attempts = attempts + 1 WHERE id IN (${marks(take)})`,
          [leaseUntil, ...take.map((r) => r.id)],
        );
      }
      return take;
    });
    if (rows.length === 0) return [];
    const events = await this.events([...new Set(rows.map((r) => r.event_id))]);
    return rows.map((r) => ({
      id: r.id,
      target: r.endpoint_id,
      eventId: r.event_id,
      endpointId: r.endpoint_id,
      attempt: Number(r.attempts) + 1,
      leaseUntil,
      event: events.get(r.event_id),
    }));
  }

  /**
   * One multi-row insert into the attempt log, and grouped updates of the deliveries. Every update is
   * conditional on the claim (`claimed_until` still being this worker's lease): a delivery cancelled
   * meanwhile, or reclaimed after an expired lease, is not overwritten.
   */
  async record(outcomes: readonly Outcome<WebhookClaim>[], now: number): Promise<void> {
    // A sandbox's deliveries (events with livemode 0) stay out of the live metrics.
    const count = { delivered: 0, retry: 0, dead: 0, cancelled: 0 };
    for (const o of outcomes) if (Number(o.claim.event?.livemode ?? 1) === 1) count[o.kind]++;
    await this.db.transaction(async (tx) => {
      afterCommit(tx, (m) => {
        for (const outcome of ['delivered', 'dead', 'cancelled', 'retry'] as const)
          m.webhookDeliveries.inc({ outcome }, count[outcome]);
      });
      await writeAttemptLog(tx, outcomes);
      // Successful deliveries of one claim batch share the lease value and usually the status code.
      const groups = new Map<string, { status: number | null; lease: number; ids: string[] }>();
      for (const o of outcomes) {
        if (o.kind !== 'delivered') continue;
        const key = `${o.result.statusCode}:${o.claim.leaseUntil}`;
        const g = groups.get(key) ?? { status: o.result.statusCode, lease: o.claim.leaseUntil, ids: [] };
        g.ids.push(o.claim.id);
        groups.set(key, g);
      }
      for (const g of groups.values()) {
        await tx.run(
          `UPDATE webhook_deliveries
           SET status = 'delivered', delivered_at = ?, claimed_until = NULL, next_attempt_at = NULL,
             last_status_code = ?, last_error = NULL WHERE claimed_until = ? AND id IN (${marks(g.ids)})`,
          [now, g.status, g.lease, ...g.ids],
        );
      }
      for (const o of outcomes) {
        const { id, leaseUntil } = o.claim;
        if (o.kind === 'cancelled') {
          await tx.run(
            `UPDATE webhook_deliveries
             SET status = 'cancelled', claimed_until = NULL, next_attempt_at = NULL, dead_at = ?,
               last_error = ? WHERE id = ? AND claimed_until = ?`,
            [now, CANCELLED, id, leaseUntil],
          );
        } else if (o.kind === 'retry') {
          await tx.run(
            `UPDATE webhook_deliveries
             SET next_attempt_at = ?, claimed_until = NULL, last_status_code = ?, last_error = ?
             WHERE id = ? AND claimed_until = ?`,
            [o.at, o.result.statusCode, o.result.error, id, leaseUntil],
          );
        } else if (o.kind === 'dead') {
          await tx.run(
            `UPDATE webhook_deliveries SET status = 'dead', dead_at = ?, next_attempt_at = NULL, claimed_until = NULL,
               last_status_code = ?, last_error = ? WHERE id = ? AND claimed_until = ?`,
            [now, o.result.statusCode, o.result.error, id, leaseUntil],
          );
        }
      }
    });
  }

  private async events(ids: string[]): Promise<Map<string, EventRow>> {
    const rows = await this.db.all<EventRow>(
      `SELECT id, type, created_at, livemode, data FROM events WHERE id IN (${marks(ids)})`,
      ids,
    );
    return new Map(rows.map((r) => [r.id, r]));
  }
}

async function writeAttemptLog(tx: SqlExecutor, outcomes: readonly Outcome<WebhookClaim>[]): Promise<void> {
  const values: SqlParam[] = [];
  for (const o of outcomes) {
    if (o.kind === 'cancelled') continue;
    const r = o.result;
    values.push(
      `wa_${randomUUID()}`,
      o.claim.id,
      o.claim.attempt,
      r.startedAt,
      r.latencyMs,
      r.statusCode,
      r.error,
      r.responseExcerpt,
    );
  }
  const chunk = ATTEMPT_COLUMNS * ROWS_PER_INSERT;
  for (let i = 0; i < values.length; i += chunk) {
    const part = values.slice(i, i + chunk);
    await tx.run(
      `INSERT INTO webhook_attempts
               (id, delivery_id, attempt, started_at, latency_ms, status_code, error, response_excerpt)
       VALUES ${Array.from({ length: part.length / ATTEMPT_COLUMNS }, () => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}
       ON CONFLICT DO NOTHING`,
      part,
    );
  }
}

/** A delivery as the log shows it: its row, its event's type, and the owning operator. */
export interface DeliveryRow {
  id: string;
  event_id: string;
  type: string;
  endpoint_id: string;
  operator_id: string;
  status: 'pending' | 'delivered' | 'dead' | 'cancelled';
  attempts: number;
  next_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
  dead_at: number | null;
  resend_of: string | null;
}

export interface AttemptLogRow {
  attempt: number;
  started_at: number;
  latency_ms: number;
  status_code: number | null;
  error: string | null;
  response_excerpt: string | null;
}

const SELECT = `SELECT d.id, d.event_id, e.type, d.endpoint_id, d.operator_id, d.status, d.attempts,
  d.next_attempt_at, d.last_status_code, d.last_error, d.created_at, d.delivered_at, d.dead_at, d.resend_of
  FROM webhook_deliveries d JOIN events e ON e.id = d.event_id`;

const ROWS_PER_STATEMENT = 250;

async function insertRows(tx: SqlExecutor, head: string, tuple: string, rows: SqlParam[][]): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    const part = rows.slice(i, i + ROWS_PER_STATEMENT);
    await tx.run(`${head} ${part.map(() => tuple).join(', ')}`, part.flat());
  }
}

/**
 * The event outbox outside the engine's claim loop: writing events and their deliveries, reading the
 * delivery log, re-sending, cancelling an endpoint's pending deliveries.
 */
export const deliveryRepository = {
  /**
   * Event rows `[id, seq, operator_id, type, created_at, data, livemode]` and delivery rows
   * `[id, event_id, endpoint_id, operator_id, next_attempt_at, created_at]`, in multi-row inserts: a
   * round that settles thousands of bets costs a few statements, not thousands.
   */
  async insertEvents(tx: SqlExecutor, eventRows: SqlParam[][], deliveryRows: SqlParam[][]): Promise<void> {
    await insertRows(
      tx,
      'INSERT INTO events (id, seq, operator_id, type, created_at, data, livemode) VALUES',
      '(?, ?, ?, ?, ?, ?, ?)',
      eventRows,
    );
    await insertRows(
      tx,
      `INSERT INTO webhook_deliveries
         (id, event_id, endpoint_id, operator_id, status, attempts, next_attempt_at, created_at) VALUES`,
      "(?, ?, ?, ?, 'pending', 0, ?, ?)",
      deliveryRows,
    );
  },

  /** A `webhook.test` event of this operator and its one delivery, due now. */
  async insertTestEvent(
    tx: SqlExecutor,
    t: { eventId: string; seq: number; deliveryId: string; endpointId: string; operatorId: string; data: string },
    now: number,
  ): Promise<void> {
    await tx.run(
      `INSERT INTO events (id, seq, operator_id, type, created_at, data, livemode)
         VALUES (?, ?, ?, ?, ?, ?, (SELECT CASE mode WHEN 'test' THEN 0 ELSE 1 END FROM operators WHERE id = ?))`,
      [t.eventId, t.seq, t.operatorId, 'webhook.test', now, t.data, t.operatorId],
    );
    await tx.run(
      `INSERT INTO webhook_deliveries
         (id, event_id, endpoint_id, operator_id, status, attempts, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`,
      [t.deliveryId, t.eventId, t.endpointId, t.operatorId, now, now],
    );
  },

  /**
   * The manual re-send of a delivery (dead, delivered or cancelled): a new row for the same event and
   * endpoint with a fresh budget of attempts, due now; the old row stays as it was, for the record.
   */
  async requeue(
    tx: SqlExecutor,
    d: { id: string; resendOf: string; eventId: string; endpointId: string; operatorId: string; now: number },
  ): Promise<void> {
    await tx.run(
      `INSERT INTO webhook_deliveries
         (id, event_id, endpoint_id, operator_id, status, attempts, next_attempt_at, created_at, resend_of)
       VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
      [d.id, d.eventId, d.endpointId, d.operatorId, d.now, d.now, d.resendOf],
    );
  },

  /**
   * The delivery of this event to this endpoint still on its schedule (a re-send queued earlier), if
   * any. Locks the endpoint row first (PostgreSQL) so two re-sends of one event queue one delivery:
   * the second waits for the first to commit and then sees its row.
   */
  async pendingResendOf(
    tx: SqlExecutor,
    d: { eventId: string; endpointId: string; operatorId: string; since: number },
  ): Promise<string | undefined> {
    await tx.get(`SELECT id FROM webhook_endpoints WHERE id = ?${forUpdate(tx)}`, [d.endpointId]);
    const row = await tx.get<{ id: string }>(
      `SELECT id FROM webhook_deliveries
       WHERE operator_id = ? AND status = 'pending' AND created_at >= ? AND event_id = ? AND endpoint_id = ?
       LIMIT 1`,
      [d.operatorId, d.since, d.eventId, d.endpointId],
    );
    return row?.id;
  },

  /**
   * An endpoint whose event list was narrowed receives nothing more of the types it dropped, including what
   * was queued for it before (a test ping, not an event type one subscribes to, is kept).
   */
  cancelPendingOfDroppedTypes(
    tx: SqlExecutor,
    endpointId: string,
    dropped: readonly string[],
    now: number,
  ): Promise<RunResult> {
    const types = dropped.map(() => '?').join(', ');
    return tx.run(
      `UPDATE webhook_deliveries
       SET status = 'cancelled', last_error = ?, next_attempt_at = NULL, claimed_until = NULL, dead_at = ?
       WHERE endpoint_id = ? AND status = 'pending'
         AND event_id IN (SELECT id FROM events WHERE type IN (${types}))`,
      ['the endpoint no longer subscribes to this event type', now, endpointId, ...dropped],
    );
  },

  /** An endpoint disabled or deleted receives nothing, including what was queued for it before. */
  cancelPendingOf(tx: SqlExecutor, endpointId: string, why: string, now: number): Promise<RunResult> {
    return tx.run(
      `UPDATE webhook_deliveries
       SET status = 'cancelled', last_error = ?, next_attempt_at = NULL, claimed_until = NULL, dead_at = ?
       WHERE endpoint_id = ? AND status = 'pending'`,
      [why, now, endpointId],
    );
  },

  /**
   * Newest first, then by id; `operatorId` null: every operator's. `after` is the page cursor: the
   * last row of the previous page (rows of one round share a created_at, so its id breaks the tie).
   * `before` keeps only rows created before an instant.
   */
  list(
    db: SqlExecutor,
    filter: {
      operatorId: string | null;
      endpointId?: string;
      status?: DeliveryRow['status'];
      before?: number;
      after?: PageCursor;
      limit: number;
    },
  ): Promise<DeliveryRow[]> {
    const where: string[] = [];
    const params: SqlParam[] = [];
    if (filter.operatorId !== null) where.push('d.operator_id = ?'), params.push(filter.operatorId);
    if (filter.endpointId) where.push('d.endpoint_id = ?'), params.push(filter.endpointId);
    if (filter.status) where.push('d.status = ?'), params.push(filter.status);
    if (filter.before !== undefined) where.push('d.created_at < ?'), params.push(filter.before);
    if (filter.after !== undefined) continueAfter(where, params, filter.after, 'd.');
    params.push(filter.limit);
    return db.all<DeliveryRow>(
      `${SELECT}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY d.created_at DESC, d.id LIMIT ?`,
      params,
    );
  },

  /** Any operator's delivery (scope null), or only this operator's. */
  byId(db: SqlExecutor, scope: string | null, id: string): Promise<DeliveryRow | undefined> {
    return scope === null
      ? db.get<DeliveryRow>(`${SELECT} WHERE d.id = ?`, [id])
      : db.get<DeliveryRow>(`${SELECT} WHERE d.id = ? AND d.operator_id = ?`, [id, scope]);
  },

  /** Whether this operator (scope null: any) has a delivery to this endpoint, which may since be deleted. */
  async anyForEndpoint(db: SqlExecutor, scope: string | null, endpointId: string): Promise<boolean> {
    const row =
      scope === null
        ? await db.get('SELECT 1 AS found FROM webhook_deliveries WHERE endpoint_id = ? LIMIT 1', [endpointId])
        : await db.get('SELECT 1 AS found FROM webhook_deliveries WHERE endpoint_id = ? AND operator_id = ? LIMIT 1', [
            endpointId,
            scope,
          ]);
    return row !== undefined;
  },

  attempts(db: SqlExecutor, deliveryId: string): Promise<AttemptLogRow[]> {
    return db.all<AttemptLogRow>(
      `SELECT attempt, started_at, latency_ms, status_code, error, response_excerpt FROM webhook_attempts
       WHERE delivery_id = ? ORDER BY attempt`,
      [deliveryId],
    );
  },
};

/**
 * Deliveries waiting to be made, and when the oldest was queued (the outbox gauges): live, active
 * operators' only. A disabled operator's deliveries are held on purpose until it is enabled again
 * (the claim skips them), which may be never: counted, they would keep the backlog alert firing
 * with nothing to fix.
 */
export async function deliveryBacklog(db: SqlExecutor): Promise<{ pending: number; oldestAt: number | null }> {
  const row = await db.get<{ pending: number | string; oldest: number | string | null }>(
    `SELECT COUNT(*) AS pending, MIN(created_at) AS oldest FROM webhook_deliveries d
     WHERE status = 'pending'
       AND NOT EXISTS (SELECT 1 FROM operators o
                       WHERE o.id = d.operator_id AND (o.mode = 'test' OR o.status <> 'active'))`,
  );
  return { pending: Number(row?.pending ?? 0), oldestAt: nullableNumber(row?.oldest) };
}

/**
 * recordEvents for one operator's event inside a synchronous unit (SQLite): the event row and one
 * delivery per enabled endpoint of that operator subscribed to its type. The PostgreSQL commands
 * write the same rows in SQL (migration 007).
 */
export function recordOperatorEventSync(tx: SyncExecutor, row: OperatorEventRow, now: number): void {
  tx.run('INSERT INTO events (id, seq, operator_id, type, created_at, data, livemode) VALUES (?, ?, ?, ?, ?, ?, ?)', [
    row.id,
    row.seq,
    row.operatorId,
    row.type,
    now,
    row.data,
    row.livemode ? 1 : 0,
  ]);
  const endpoints = tx.all<{ id: string; events: string }>(
    'SELECT id, events FROM webhook_endpoints WHERE enabled = 1 AND operator_id = ?',
    [row.operatorId],
  );
  for (const endpoint of endpoints) {
    if (!(JSON.parse(endpoint.events) as string[]).includes(row.type)) continue;
    tx.run(
      `INSERT INTO webhook_deliveries
       (id, event_id, endpoint_id, operator_id, status, attempts, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`,
      [`dlv_${timeOrderedId(now)}`, row.id, endpoint.id, row.operatorId, now, now],
    );
  }
}
