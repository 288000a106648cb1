import type { RunResult, SqlExecutor, SyncExecutor } from '../store/database';

/** A key's row as the interactive path reads it back: the request it was claimed for and its answer. */
export interface KeyRow {
  request_hash: string;
  status_code: number | null;
  response: string | null;
}

/** What a key row is claimed with. */
export interface KeyClaimRow {
  operatorId: string;
  key: string;
  requestHash: string;
  /** The request's signature (null when it has none): the unique index refuses the same bytes under another key. */
  signature: string | null;
  createdAt: number;
}

/** A response as the surface sends it (and as a replay sends it again). */
export interface CommandResponse {
  statusCode: number;
  body: unknown;
}

/** What a one-unit command needs to claim its key in the same unit as its effect. */
export interface KeyClaim {
  operatorId: string;
  key: string;
  requestHash: string;
  signature: string | null;
  now: number;
}

/** A key that could not be claimed: used before (its row, to replay or refuse), or its signature was. */
export type ClaimConflict = ({ outcome: 'existing' } & KeyRow) | { outcome: 'signature_replayed' };

/**
 * What a one-unit command answers: the response it stored under the key, a conflict on the key, or
 * that it wrote nothing and the full interactive path must run (an uncommon case it leaves to it).
 */
export type CommandAnswer = CommandResponse | ClaimConflict | { outcome: 'full_path' };

/**
 * Claims a key with its final response inside a synchronous unit (SQLite); the PostgreSQL commands
 * do the same in rbs_claim_key, or for a whole call of bets in rbs_place_bets (store/postgres/sql).
 * Null: claimed.
 */
export function claimKeySync(
  tx: SyncExecutor,
  claim: KeyClaim,
  statusCode: number,
  response: string,
): ClaimConflict | null {
  const r = tx.run(
    `INSERT INTO idempotency_keys (operator_id, idem_key, request_hash, status_code, response, created_at, signature)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    [claim.operatorId, claim.key, claim.requestHash, statusCode, response, claim.now, claim.signature],
  );
  if (r.changes === 1) return null;
  const row = tx.get<KeyRow>(
    'SELECT request_hash, status_code, response FROM idempotency_keys WHERE operator_id = ? AND idem_key = ?',
    [claim.operatorId, claim.key],
  );
  return row ? { outcome: 'existing', ...row } : { outcome: 'signature_replayed' };
}

/**
 * The `idempotency_keys` table on the interactive path (IdempotencyService). The one-unit commands
 * claim their key with claimKeySync above, or in their PostgreSQL function (store/postgres/sql). Every function returns
 * the executor's promise as it is, so the path pays no extra hop for the move into a repository.
 */
export const idempotencyRepository = {
  /** Claims the key with no answer yet; `changes` 0: the key, or the signature, is taken. */
  claim(tx: SqlExecutor, c: KeyClaimRow): Promise<RunResult> {
    return tx.run(
      `INSERT INTO idempotency_keys (operator_id, idem_key, request_hash, created_at, signature)
           VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      [c.operatorId, c.key, c.requestHash, c.createdAt, c.signature],
    );
  },

  /** Claims the key with its final answer at once (a stored refusal); `changes` 0: something was there first. */
  claimAnswered(tx: SqlExecutor, c: KeyClaimRow, statusCode: number, response: string): Promise<RunResult> {
    return tx.run(
      `INSERT INTO idempotency_keys
             (operator_id, idem_key, request_hash, status_code, response, created_at, signature)
           VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      [c.operatorId, c.key, c.requestHash, statusCode, response, c.createdAt, c.signature],
    );
  },

  /**
   * Records a signature that was answered from a key it did not claim (an idempotent retry signed
   * afresh): the signature index then refuses those bytes under any other key. The row sits under
   * `retried:<operator id>`, which no operator id (`op_…`) equals, so no key lookup ever reads it; it is
   * purged with the keys. `changes` 0: the signature was already recorded.
   */
  noteSignature(tx: SqlExecutor, c: KeyClaimRow): Promise<RunResult> {
    return tx.run(
      `INSERT INTO idempotency_keys (operator_id, idem_key, request_hash, created_at, signature)
           VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      [`retried:${c.operatorId}`, c.signature, c.requestHash, c.createdAt, c.signature],
    );
  },

  /**
   * Records the signature of a request refused after its signature was checked and before any key was
   * claimed (rate limited, operator disabled), with the key it carried: the same bytes under another
   * key are then refused as a replay, while the same bytes under the same key (a resend after the
   * 429) may still claim it (releaseRefusal). The row sits under `refused:<operator id>`, which no
   * operator id equals, and is purged with the keys.
   */
  noteRefusal(tx: SqlExecutor, r: { operatorId: string; key: string; signature: string; createdAt: number }) {
    return tx.run(
      `INSERT INTO idempotency_keys (operator_id, idem_key, request_hash, created_at, signature)
           VALUES (?, ?, '', ?, ?) ON CONFLICT DO NOTHING`,
      [`refused:${r.operatorId}`, `${r.key}\n${r.signature}`, r.createdAt, r.signature],
    );
  },

  /** Drops the refusal record of these very bytes under this very key; `changes` 1: there was one. */
  releaseRefusal(tx: SqlExecutor, r: { operatorId: string; key: string; signature: string }): Promise<RunResult> {
    return tx.run('DELETE FROM idempotency_keys WHERE operator_id = ? AND idem_key = ? AND signature = ?', [
      `refused:${r.operatorId}`,
      `${r.key}\n${r.signature}`,
      r.signature,
    ]);
  },

  byKey(db: SqlExecutor, operatorId: string, key: string): Promise<KeyRow | undefined> {
    return db.get<KeyRow>(
      'SELECT request_hash, status_code, response FROM idempotency_keys WHERE operator_id = ? AND idem_key = ?',
      [operatorId, key],
    );
  },

  /** Stores the answer on a key claimed in this transaction. */
  complete(tx: SqlExecutor, operatorId: string, key: string, statusCode: number, response: string): Promise<RunResult> {
    return tx.run('UPDATE idempotency_keys SET status_code = ?, response = ? WHERE operator_id = ? AND idem_key = ?', [
      statusCode,
      response,
      operatorId,
      key,
    ]);
  },

  purge(tx: SqlExecutor, olderThan: number): Promise<RunResult> {
    return tx.run('DELETE FROM idempotency_keys WHERE created_at < ?', [olderThan]);
  },
};
