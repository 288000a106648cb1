import { randomUUID } from 'node:crypto';
import { DomainError } from '../errors/codes';
import { afterCommit } from '../observability/instrumented-db';
import { OperatorModes } from '../operators/operator-mode';
import { LOST_ATTEMPT, TargetBudget, type ClaimQuery, type Outcome, type OutboxRepository } from '../outbox/engine';
import { skipLocked, type Database, type SqlExecutor, type SqlParam, nullableNumber } from '../store/database';
import type { AttemptRow, Settlement, SettlementClaim, SettlementStatus, SettleBody } from './settlements';
import type { OperatorMode } from '../operators/operator';

/** Which settlements a list shows: one operator's, or one mode's operators' (the CLI: live ones), by status. */
export interface SettlementFilter {
  operatorId?: string;
  mode?: OperatorMode;
  status?: SettlementStatus;
  /**
   * The page cursor: only settlements after this position in the list's order. A round's settlements
   * share `created_at`, so the bet id breaks the tie; a limit alone never reached past the first page.
   */
  after?: SettlementCursor;
  limit: number;
}

/** A settlement's place in the oldest-first order; both fields are fixed when the row is written. */
export interface SettlementCursor {
  createdAt: number;
  betId: string;
}

interface SettlementRow {
  bet_id: string;
  operator_id: string;
  idempotency_key: string;
  body: string;
  status: SettlementStatus;
  attempts: number;
  next_attempt_at: number | null;
  claimed_until: number | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

function toSettlement(r: SettlementRow): Settlement {
  return {
    betId: r.bet_id,
    operatorId: r.operator_id,
    idempotencyKey: r.idempotency_key,
    body: r.body,
    status: r.status,
    attempts: Number(r.attempts),
    nextAttemptAt: nullableNumber(r.next_attempt_at),
    claimedUntil: nullableNumber(r.claimed_until),
    lastStatusCode: nullableNumber(r.last_status_code),
    lastError: r.last_error,
    createdAt: Number(r.created_at),
    deliveredAt: nullableNumber(r.delivered_at),
  };
}

export const settlementRepository = {
  /** Inside the settling transaction. A second call for the same bet changes nothing. */
  async enqueue(
    tx: SqlExecutor,
    input: { operatorId: string; body: SettleBody; now: number; firstDelayMs: number },
  ): Promise<void> {
    await tx.run(
      `INSERT INTO wallet_settlements
         (bet_id, operator_id, idempotency_key, body, status, attempts, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT DO NOTHING`,
      [
        input.body.bet_id,
        input.operatorId,
        input.body.idempotency_key,
        JSON.stringify(input.body),
        input.now + input.firstDelayMs,
        input.now,
      ],
    );
  },

  /** Claims due rows for one attempt each (see WalletSettlementOutbox.claim); tests and tools. */
  async claimDue(db: Database, now: number, leaseMs: number, limit: number): Promise<Settlement[]> {
    const q = {
      now,
      leaseUntil: now + leaseMs,
      leaseMs,
      limit,
      maxAttempts: Number.POSITIVE_INFINITY,
      inFlightByTarget: new Map<string, number>(),
      perTargetLimit: limit,
    };
    return (await new WalletSettlementOutbox(db, leaseMs).claim(q)).map((c) => c.settlement);
  },

  async byBet(db: SqlExecutor, betId: string): Promise<Settlement | undefined> {
    const row = await db.get<SettlementRow>('SELECT * FROM wallet_settlements WHERE bet_id = ?', [betId]);
    return row ? toSettlement(row) : undefined;
  },

  /**
   * The settlements of several bets in one query (a listing's page), keyed by bet id; a bet without a
   * settle call has no entry. Callers pass at most a page of ids, well under every store's parameter limit.
   */
  async byBets(db: SqlExecutor, betIds: readonly string[]): Promise<Map<string, Settlement>> {
    const found = new Map<string, Settlement>();
    if (betIds.length === 0) return found;
    const rows = await db.all<SettlementRow>(
      `SELECT * FROM wallet_settlements WHERE bet_id IN (${betIds.map(() => '?').join(', ')})`,
      [...betIds],
    );
    for (const row of rows) found.set(row.bet_id, toSettlement(row));
    return found;
  },

  async list(db: SqlExecutor, filter: SettlementFilter): Promise<Settlement[]> {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (filter.operatorId) where.push('operator_id = ?'), params.push(filter.operatorId);
    if (filter.mode) where.push('operator_id IN (SELECT id FROM operators WHERE mode = ?)'), params.push(filter.mode);
    if (filter.status) where.push('status = ?'), params.push(filter.status);
    if (filter.after) {
      where.push('(created_at > ? OR (created_at = ? AND bet_id > ?))');
      params.push(filter.after.createdAt, filter.after.createdAt, filter.after.betId);
    }
    params.push(filter.limit);
    const rows = await db.all<SettlementRow>(
      `SELECT * FROM wallet_settlements${where.length ? ` WHERE ${where.join(' AND ')}` : ''}
       ORDER BY created_at, bet_id LIMIT ?`,
      params,
    );
    return rows.map(toSettlement);
  },

  /** How many of one operator's settle calls the wallet has not confirmed yet. */
  async pendingCount(db: SqlExecutor, operatorId: string): Promise<number> {
    const row = await db.get<{ pending: number | string }>(
      `SELECT COUNT(*) AS pending FROM wallet_settlements WHERE operator_id = ? AND status = 'pending'`,
      [operatorId],
    );
    return Number(row?.pending ?? 0);
  },

  async attempts(db: SqlExecutor, betId: string): Promise<AttemptRow[]> {
    const rows = await db.all<AttemptRow>('SELECT * FROM wallet_attempts WHERE bet_id = ? ORDER BY attempt', [betId]);
    return rows.map((r) => ({
      ...r,
      attempt: Number(r.attempt),
      started_at: Number(r.started_at),
      latency_ms: Number(r.latency_ms),
      status_code: nullableNumber(r.status_code),
    }));
  },

  /**
   * Makes a settlement due now, if its status is one of `statuses`. A delivered one goes back to
   * pending and is sent again with its original idempotency_key, which the wallet answers without
   * crediting twice. Returns whether it changed anything. Conditional in the UPDATE itself, so a
   * settlement the worker confirms meanwhile is not re-sent unless `statuses` allows it.
   */
  async makeDue(tx: SqlExecutor, betId: string, now: number, statuses: readonly SettlementStatus[]): Promise<boolean> {
    const r = await tx.run(
      `UPDATE wallet_settlements SET status = 'pending', next_attempt_at = ?, delivered_at = NULL
       WHERE bet_id = ? AND status IN (${statuses.map(() => '?').join(', ')})`,
      [now, betId, ...statuses],
    );
    return r.changes === 1;
  },

  /** Makes a settlement due now whatever its status (see makeDue); the rule callers apply is retrySettlement's. */
  async retryNow(db: Database, betId: string, now: number): Promise<Settlement> {
    return db.transaction(async (tx) => {
      if (!(await settlementRepository.makeDue(tx, betId, now, ['pending', 'delivered']))) {
        throw new DomainError('NOT_FOUND', `no wallet settlement for bet ${betId}`);
      }
      return (await settlementRepository.byBet(tx, betId))!;
    });
  },
};

/**
 * The wallet outbox's SQL for the shared outbox engine: `wallet_settlements` and its attempt log
 * `wallet_attempts`. `attempts` counts the attempts recorded (what the API and the dashboard show);
 * a claim fixes the next attempt's number under its lease. A worker that dies mid-call leaves a
 * lease that runs out; the next claim logs that attempt as "outcome unknown", counts it, and makes
 * the next one with the same idempotency_key. A settlement is never dead-lettered (the engine runs
 * it on an unbounded backoff) and never cancelled.
 */
export class WalletSettlementOutbox implements OutboxRepository<SettlementClaim> {
  /** Sandboxes' settlements (their simulated wallet's failures too) stay out of the live metrics. */
  private readonly modes = new OperatorModes();

  /**
   * `leaseMs`: the lease a claim of this worker takes (the engine's), which tells when a lease still
   * open at start was taken. Without it, releaseLeases can only end those leases, and the claim then
   * logs their attempts as starting one lease before the restart instead of when they did.
   */
  constructor(
    private readonly db: Database,
    private readonly leaseMs: number | null = null,
  ) {}

  /**
   * The leases a dead predecessor left open (SQLite: one process owns the store). Each stands for a
   * call that got no recorded answer: it is logged and counted here as lost, with the time it really
   * started (lease end − lease length, while the lease end is still on the row), and the row is due
   * for its next attempt under the same idempotency_key.
   */
  async releaseLeases(now: number): Promise<void> {
    const leaseMs = this.leaseMs;
    await this.db.transaction(async (tx) => {
      if (leaseMs === null) {
        await tx.run(`UPDATE wallet_settlements SET claimed_until = ? WHERE status = 'pending' AND claimed_until > ?`, [
          now,
          now,
        ]);
        return;
      }
      const open = await tx.all<Pick<SettlementRow, 'bet_id' | 'attempts' | 'claimed_until'>>(
        `SELECT bet_id, attempts, claimed_until FROM wallet_settlements WHERE status = 'pending' AND claimed_until > ?`,
        [now],
      );
      for (const row of open) {
        const attempt = Number(row.attempts) + 1;
        await tx.run(
          `UPDATE wallet_settlements SET claimed_until = NULL, attempts = ? WHERE bet_id = ? AND claimed_until = ?`,
          [attempt, row.bet_id, row.claimed_until],
        );
        await logLostAttempt(tx, row.bet_id, attempt, Number(row.claimed_until) - leaseMs);
      }
    });
  }

  /** Never dead-letters: `maxAttempts` is not consulted (the wallet outbox retries until a 2xx). */
  async claim(q: ClaimQuery): Promise<SettlementClaim[]> {
    const { now, leaseUntil, leaseMs, limit } = q;
    // The target is the operator (its wallet): one whose wallet hangs holds only its own share of the calls.
    const budget = new TargetBudget(q);
    const full = budget.full.length === 0 ? '' : ` AND operator_id NOT IN (${budget.full.map(() => '?').join(', ')})`;
    return this.db.transaction(async (tx) => {
      const rows = await tx.all<SettlementRow>(
        `SELECT * FROM wallet_settlements
         WHERE status = 'pending' AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)${full}
         ORDER BY next_attempt_at, bet_id LIMIT ?${skipLocked(tx)}`,
        [now, now, ...budget.full, limit],
      );
      const taken = rows.filter((row) => budget.take(row.operator_id));
      // One update leases every row taken; a row changed meanwhile is not returned and not claimed.
      const leased = new Set<string>();
      for (let i = 0; i < taken.length; i += ROWS_PER_STATEMENT) {
        const part = taken.slice(i, i + ROWS_PER_STATEMENT);
        const changed = await tx.all<{ bet_id: string }>(
          `UPDATE wallet_settlements
           SET claimed_until = ?, attempts = attempts + (CASE WHEN claimed_until IS NULL THEN 0 ELSE 1 END)
           WHERE bet_id IN (${marks(part)}) AND status = 'pending' AND (claimed_until IS NULL OR claimed_until <= ?)
           RETURNING bet_id`,
          [leaseUntil, ...part.map((r) => r.bet_id), now],
        );
        for (const c of changed) leased.add(c.bet_id);
      }
      const claimed: SettlementClaim[] = [];
      for (const row of taken) {
        if (!leased.has(row.bet_id)) continue;
        // A lease still on the row was never answered (a recorded attempt clears it): that attempt is lost.
        const lost = row.claimed_until !== null;
        const recorded = Number(row.attempts) + (lost ? 1 : 0);
        if (lost) await logLostAttempt(tx, row.bet_id, recorded, Number(row.claimed_until) - leaseMs);
        // Once per claimed settlement: the fresh object is amended, not spread (docs/decisions.md).
        const settlement = Object.assign(toSettlement(row), { attempts: recorded, claimedUntil: leaseUntil });
        claimed.push({ id: row.bet_id, target: row.operator_id, attempt: recorded + 1, leaseUntil, settlement });
      }
      return claimed;
    });
  }

  /**
   * Logs each attempt and moves its row on: delivered, or due again (a manual retry's time wins). A
   * batch of answers costs a few statements, not a few per answer: one read of the rows, one insert
   * into the attempt log per 200 answers, one update per group of confirmations that share their
   * attempt number and status; only failed attempts are moved one by one.
   */
  async record(outcomes: readonly Outcome<SettlementClaim>[], now: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      const sandboxes = await this.modes.testModeOperators(
        tx,
        outcomes.map((o) => o.claim.settlement.operatorId),
      );
      const current = new Map<string, { next_attempt_at: number | null; claimed_until: number | null }>();
      const ids = outcomes.map((o) => o.claim.settlement.betId);
      for (let i = 0; i < ids.length; i += ROWS_PER_STATEMENT) {
        const part = ids.slice(i, i + ROWS_PER_STATEMENT);
        const rows = await tx.all<{ bet_id: string; next_attempt_at: number | null; claimed_until: number | null }>(
          `SELECT bet_id, next_attempt_at, claimed_until FROM wallet_settlements WHERE bet_id IN (${marks(part)})`,
          part,
        );
        for (const r of rows) current.set(r.bet_id, r);
      }
      const counted = { delivered: 0, failed: 0 };
      const attemptRows: SqlParam[][] = [];
      const confirmed = new Map<string, { attempt: number; status: number | null; ids: string[] }>();
      for (const o of outcomes) {
        if (o.kind === 'dead' || o.kind === 'cancelled') throw new Error(`a wallet settlement is never ${o.kind}`);
        const { settlement: s, attempt, leaseUntil } = o.claim;
        const row = current.get(s.betId);
        // Gone, or taken by another worker after this lease ran out: that worker logged this attempt as lost.
        if (!row || nullableNumber(row.claimed_until) !== leaseUntil) continue;
        const r = o.result;
        if (!sandboxes.has(s.operatorId)) counted[o.kind === 'delivered' ? 'delivered' : 'failed']++;
        attemptRows.push([
          `wat_${randomUUID()}`,
          s.betId,
          attempt,
          r.startedAt,
          r.latencyMs,
          r.statusCode,
          r.error,
          r.responseExcerpt,
        ]);
        if (o.kind === 'delivered') {
          const key = `${attempt}:${r.statusCode}`;
          const group = confirmed.get(key) ?? { attempt, status: r.statusCode, ids: [] };
          group.ids.push(s.betId);
          confirmed.set(key, group);
          continue;
        }
        // A manual retry requested while this attempt was in flight moved next_attempt_at: honour it.
        const retried = nullableNumber(row.next_attempt_at) !== s.nextAttemptAt;
        const next = retried ? (nullableNumber(row.next_attempt_at) ?? now) : o.at;
        await tx.run(
          `UPDATE wallet_settlements
           SET attempts = ?, claimed_until = NULL, last_status_code = ?, last_error = ?, next_attempt_at = ?
           WHERE bet_id = ? AND status = 'pending'`,
          [attempt, r.statusCode, r.error, next, s.betId],
        );
      }
      if (counted.delivered + counted.failed > 0) {
        afterCommit(tx, (m) => {
          if (counted.delivered > 0) m.walletSettlements.inc({ outcome: 'delivered' }, counted.delivered);
          if (counted.failed > 0) m.walletSettlements.inc({ outcome: 'failed' }, counted.failed);
        });
      }
      for (let i = 0; i < attemptRows.length; i += ROWS_PER_STATEMENT) {
        const part = attemptRows.slice(i, i + ROWS_PER_STATEMENT);
        await tx.run(
          `INSERT INTO wallet_attempts
             (id, bet_id, attempt, started_at, latency_ms, status_code, error, response_excerpt)
           VALUES ${part.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
          part.flat(),
        );
      }
      for (const g of confirmed.values()) {
        for (let i = 0; i < g.ids.length; i += ROWS_PER_STATEMENT) {
          const part = g.ids.slice(i, i + ROWS_PER_STATEMENT);
          await tx.run(
            `UPDATE wallet_settlements SET status = 'delivered', attempts = ?, claimed_until = NULL,
               next_attempt_at = NULL, last_status_code = ?, last_error = NULL, delivered_at = ?
             WHERE bet_id IN (${marks(part)})`,
            [g.attempt, g.status, now, ...part],
          );
        }
      }
    });
  }
}

/** Rows (or ids) per statement: well under either store's limit of bound parameters. */
const ROWS_PER_STATEMENT = 200;
const marks = (items: readonly unknown[]): string => items.map(() => '?').join(', ');

/** An attempt whose worker stopped (or lost its lease) before recording the wallet's answer. */
async function logLostAttempt(tx: SqlExecutor, betId: string, attempt: number, startedAt: number): Promise<void> {
  await tx.run(
    `INSERT INTO wallet_attempts (id, bet_id, attempt, started_at, latency_ms, status_code, error, response_excerpt)
     VALUES (?, ?, ?, ?, 0, NULL, ?, NULL)`,
    [`wat_${randomUUID()}`, betId, attempt, startedAt, LOST_ATTEMPT],
  );
}

/**
 * Settlements the wallet has not confirmed yet, and when the oldest was written (the outbox gauges):
 * live operators' only, so a sandbox's simulated wallet outage raises no alert.
 */
export async function settlementBacklog(db: SqlExecutor): Promise<{ pending: number; oldestAt: number | null }> {
  const row = await db.get<{ pending: number | string; oldest: number | string | null }>(
    `SELECT COUNT(*) AS pending, MIN(created_at) AS oldest FROM wallet_settlements s
     WHERE status = 'pending'
       AND NOT EXISTS (SELECT 1 FROM operators o WHERE o.id = s.operator_id AND o.mode = 'test')`,
  );
  return { pending: Number(row?.pending ?? 0), oldestAt: nullableNumber(row?.oldest) };
}
