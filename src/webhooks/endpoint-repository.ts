import { forUpdate, type RunResult, type SqlExecutor } from '../store/database';

/** A `webhook_endpoints` row as stored: secrets sealed (the service opens them with the master key). */
export interface EndpointRow {
  id: string;
  operator_id: string;
  url: string;
  surface: string;
  events: string;
  enabled: number;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

/** An enabled endpoint as the outbox reads it to fan an event out: who owns it and what it subscribed to. */
export interface SubscriberRow {
  id: string;
  operator_id: string;
  events: string;
}

/**
 * The `webhook_endpoints` table. Scoped reads take the operator (`scope`): a foreign id is simply not
 * found; a null scope is the service's own administration.
 */
export const endpointRepository = {
  async countForOperator(db: SqlExecutor, operatorId: string): Promise<number> {
    const count = await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE operator_id = ?', [
      operatorId,
    ]);
    return Number(count?.n ?? 0);
  },

  async insert(tx: SqlExecutor, r: Omit<EndpointRow, 'previous_secret_enc' | 'previous_secret_expires_at'>) {
    await tx.run(
      `INSERT INTO webhook_endpoints
         (id, operator_id, url, surface, events, enabled, secret_enc, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [r.id, r.operator_id, r.url, r.surface, r.events, r.enabled, r.secret_enc, r.created_at, r.updated_at],
    );
  },

  listForOperator(db: SqlExecutor, operatorId: string): Promise<EndpointRow[]> {
    return db.all<EndpointRow>('SELECT * FROM webhook_endpoints WHERE operator_id = ? ORDER BY created_at, id', [
      operatorId,
    ]);
  },

  /** Any operator's endpoint (scope null), or only this operator's. */
  byId(db: SqlExecutor, scope: string | null, id: string): Promise<EndpointRow | undefined> {
    return scope === null
      ? db.get<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ?', [id])
      : db.get<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ? AND operator_id = ?', [id, scope]);
  },

  /** The row, locked until the transaction ends (PostgreSQL; SQLite writes one transaction at a time). */
  byIdForUpdate(tx: SqlExecutor, id: string): Promise<EndpointRow | undefined> {
    return tx.get<EndpointRow>(`SELECT * FROM webhook_endpoints WHERE id = ?${forUpdate(tx)}`, [id]);
  },

  async update(
    tx: SqlExecutor,
    id: string,
    change: { url: string; events: string; enabled: number },
    now: number,
  ): Promise<void> {
    await tx.run('UPDATE webhook_endpoints SET url = ?, events = ?, enabled = ?, updated_at = ? WHERE id = ?', [
      change.url,
      change.events,
      change.enabled,
      now,
      id,
    ]);
  },

  async delete(tx: SqlExecutor, id: string): Promise<void> {
    await tx.run('DELETE FROM webhook_endpoints WHERE id = ?', [id]);
  },

  /**
   * Replaces the secret only if it is still `currentSecretEnc` (`changes` 0: rotated concurrently); the
   * previous one keeps signing until `previousExpiresAt` when given.
   */
  rotateSecret(
    tx: SqlExecutor,
    id: string,
    r: {
      secretEnc: string;
      previousSecretEnc: string | null;
      previousExpiresAt: number | null;
      currentSecretEnc: string;
      now: number;
    },
  ): Promise<RunResult> {
    return tx.run(
      `UPDATE webhook_endpoints
         SET secret_enc = ?, previous_secret_enc = ?, previous_secret_expires_at = ?, updated_at = ?
         WHERE id = ? AND secret_enc = ?`,
      [r.secretEnc, r.previousSecretEnc, r.previousExpiresAt, r.now, id, r.currentSecretEnc],
    );
  },

  /**
   * Every enabled endpoint with its operator's mode and whether the operator is active: the
   * subscribers of a live round's events.
   */
  enabledWithOperator(tx: SqlExecutor): Promise<(SubscriberRow & { mode: string; active: number })[]> {
    return tx.all<SubscriberRow & { mode: string; active: number }>(
      `SELECT e.id, e.operator_id, e.events, o.mode, CASE WHEN o.status = 'active' THEN 1 ELSE 0 END AS active
           FROM webhook_endpoints e JOIN operators o ON o.id = e.operator_id WHERE e.enabled = 1`,
    );
  },

  enabledForOperator(tx: SqlExecutor, operatorId: string): Promise<SubscriberRow[]> {
    return tx.all<SubscriberRow>(
      'SELECT id, operator_id, events FROM webhook_endpoints WHERE enabled = 1 AND operator_id = ?',
      [operatorId],
    );
  },

  enabled(tx: SqlExecutor): Promise<SubscriberRow[]> {
    return tx.all<SubscriberRow>('SELECT id, operator_id, events FROM webhook_endpoints WHERE enabled = 1');
  },
};
