import { continueAfter, type PageCursor, type SqlExecutor, type SqlParam } from '../store/database';
import type { ComplianceRule } from '../webhooks/payloads';

/** A compliance_flags row: `details` holds the flag's context and measurements as JSON. */
export interface FlagRow {
  id: string;
  operator_id: string;
  rule: ComplianceRule;
  player: string | null;
  bet_id: string | null;
  details: string;
  created_at: number;
  /** When the flag was acknowledged (ms); absent on a row being inserted, null while it is open. */
  acknowledged_at?: number | string | null;
  /** Who acknowledged it: a dashboard user's email, or `admin:<name>` from the admin CLI. */
  acknowledged_by?: string | null;
}

/** Which flags a listing keeps by their acknowledgement: open (not acknowledged), acknowledged, or both. */
export type FlagState = 'open' | 'acknowledged';

/** Raised compliance flags, and the places (hashed addresses) each player session was used from. */
export const complianceRepository = {
  /**
   * Holds, until this transaction ends, a lock that any other transaction taking the same key waits
   * for (PostgreSQL; SQLite's one writer already runs such transactions one after the other).
   */
  async lockForTransaction(tx: SqlExecutor, key: string): Promise<void> {
    if (tx.dialect !== 'postgres') return;
    await tx.get('SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?)) AS locked', ['compliance', key]);
  },

  async insertFlag(tx: SqlExecutor, f: FlagRow): Promise<void> {
    await tx.run(
      `INSERT INTO compliance_flags (id, operator_id, rule, player, bet_id, details, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
      [f.id, f.operator_id, f.rule, f.player, f.bet_id, f.details, f.created_at],
    );
  },

  /** Whether this rule already flagged this player of this operator after `since`. */
  async flaggedSince(
    db: SqlExecutor,
    q: { operatorId: string; rule: ComplianceRule; player: string; since: number },
  ): Promise<boolean> {
    const row = await db.get<{ id: string }>(
      'SELECT id FROM compliance_flags WHERE operator_id = ? AND rule = ? AND player = ? AND created_at > ? LIMIT 1',
      [q.operatorId, q.rule, q.player, q.since],
    );
    return row !== undefined;
  },

  /** One flag, if it is this operator's (any operator's when `scope` is null). */
  async flagById(db: SqlExecutor, scope: string | null, id: string): Promise<FlagRow | undefined> {
    return scope === null
      ? db.get<FlagRow>('SELECT * FROM compliance_flags WHERE id = ?', [id])
      : db.get<FlagRow>('SELECT * FROM compliance_flags WHERE id = ? AND operator_id = ?', [id, scope]);
  },

  /**
   * Newest first, then by id; every operator's when `scope` is null. `after` is the page cursor: the
   * last flag of the previous page (flags raised by one round's close share a created_at).
   */
  async listFlags(
    db: SqlExecutor,
    scope: string | null,
    filter: {
      rule?: string;
      player?: string;
      before?: number;
      state?: FlagState;
      after?: PageCursor;
      limit: number;
    },
  ): Promise<FlagRow[]> {
    const where: string[] = [];
    const params: SqlParam[] = [];
    if (scope !== null) where.push('operator_id = ?'), params.push(scope);
    if (filter.rule !== undefined) where.push('rule = ?'), params.push(filter.rule);
    if (filter.player !== undefined) where.push('player = ?'), params.push(filter.player);
    if (filter.before !== undefined) where.push('created_at < ?'), params.push(filter.before);
    if (filter.state === 'open') where.push('acknowledged_at IS NULL');
    if (filter.state === 'acknowledged') where.push('acknowledged_at IS NOT NULL');
    if (filter.after !== undefined) {
      // Implied by the cursor's condition, but stated so that both stores seek the index to the cursor
      // instead of reading every newer flag of the operator and filtering them out (deep pages).
      where.push('created_at <= ?'), params.push(filter.after.createdAt);
      continueAfter(where, params, filter.after);
    }
    params.push(filter.limit);
    const filtered = where.length ? ` WHERE ${where.join(' AND ')}` : '';
    return db.all<FlagRow>(`SELECT * FROM compliance_flags${filtered} ORDER BY created_at DESC, id LIMIT ?`, params);
  },

  /**
   * Marks this operator's flag acknowledged, unless it already is (the first acknowledgement, its time
   * and who made it, stays). Resolves false only when the operator has no such flag.
   */
  async acknowledge(
    tx: SqlExecutor,
    a: { scope: string | null; id: string; by: string; now: number },
  ): Promise<boolean> {
    const where = a.scope === null ? 'id = ?' : 'id = ? AND operator_id = ?';
    const params = a.scope === null ? [a.id] : [a.id, a.scope];
    const changed = await tx.run(
      `UPDATE compliance_flags SET acknowledged_at = ?, acknowledged_by = ? WHERE ${where} AND acknowledged_at IS NULL`,
      [a.now, a.by, ...params],
    );
    if (changed.changes > 0) return true;
    return (await complianceRepository.flagById(tx, a.scope, a.id)) !== undefined;
  },

  /**
   * Records that a session was used from a place. Resolves true for a place new to the session; a
   * place already known only has its last-seen time refreshed (false).
   */
  async notePlace(
    tx: SqlExecutor,
    p: { sessionId: string; placeHash: string; operatorId: string; now: number },
  ): Promise<boolean> {
    const inserted = await tx.run(
      `INSERT INTO compliance_session_places (session_id, place, operator_id, first_seen_at, last_seen_at)
       VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      [p.sessionId, p.placeHash, p.operatorId, p.now, p.now],
    );
    if (inserted.changes > 0) return true;
    await tx.run('UPDATE compliance_session_places SET last_seen_at = ? WHERE session_id = ? AND place = ?', [
      p.now,
      p.sessionId,
      p.placeHash,
    ]);
    return false;
  },

  /** Distinct places a session was used from since `since`. */
  async placesSince(tx: SqlExecutor, sessionId: string, since: number): Promise<number> {
    const row = await tx.get<{ n: number }>(
      'SELECT COUNT(*) AS n FROM compliance_session_places WHERE session_id = ? AND last_seen_at > ?',
      [sessionId, since],
    );
    return Number(row?.n ?? 0);
  },
};
