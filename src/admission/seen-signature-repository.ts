import type { Database } from '../store/database';
import { type ReplayRecordHistory, type SeenSignatureStore, type SignatureVerdict, verdict } from './replay-guard';

/** The `seen_signatures` table: one insert per state-changing request, purged with the idempotency keys. */
export class DatabaseSeenSignatures implements SeenSignatureStore {
  constructor(private readonly db: Database) {}

  async claim(signature: string, binding: string, expiresAt: number): Promise<SignatureVerdict> {
    const sql = 'INSERT INTO seen_signatures (signature, binding, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING';
    const params = [signature, binding, expiresAt];
    // PostgreSQL: one autocommit statement (a single round trip). SQLite: the write joins the
    // adapter's group commit, sharing its fsync with the requests around it.
    const inserted =
      this.db.dialect === 'postgres'
        ? await this.db.run(sql, params)
        : await this.db.transaction((tx) => tx.run(sql, params));
    if (inserted.changes === 1) return 'first';
    const row = await this.db.get<{ binding: string }>('SELECT binding FROM seen_signatures WHERE signature = ?', [
      signature,
    ]);
    return verdict(row?.binding, binding);
  }

  async purge(now: number): Promise<number> {
    const r = await this.db.transaction((tx) => tx.run('DELETE FROM seen_signatures WHERE expires_at < ?', [now]));
    return r.changes;
  }
}

/**
 * The row saying this deployment keeps its replay record in Redis. It sits among the seen signatures
 * (it is part of the same record) under a name no signature can take (signatures are `<timestamp>.<hex>`),
 * and never expires, so the purge keeps it.
 */
const REDIS_RECORD_ROW = 'replay-record-kept-in-redis';

export class DatabaseReplayRecordHistory implements ReplayRecordHistory {
  constructor(private readonly db: Database) {}

  async usedBefore(): Promise<boolean> {
    const row = await this.db.get<{ binding: string }>('SELECT binding FROM seen_signatures WHERE signature = ?', [
      REDIS_RECORD_ROW,
    ]);
    return row !== undefined;
  }

  async noteUse(): Promise<void> {
    const sql = 'INSERT INTO seen_signatures (signature, binding, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING';
    await this.db.transaction((tx) => tx.run(sql, [REDIS_RECORD_ROW, 'redis', Number.MAX_SAFE_INTEGER]));
  }
}
