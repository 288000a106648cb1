import type { SqlExecutor } from '../store/database';
import type { OperatorMode, OperatorStatus } from './operator';

/** An operators row as stored: secrets sealed (the service opens them with the master key). */
export interface OperatorRow {
  id: string;
  name: string;
  api_key: string;
  secret_enc: string;
  previous_secret_enc: string | null;
  previous_secret_expires_at: number | null;
  wallet_url: string | null;
  /** 1 once a wallet URL has been set: clearing the URL later pauses the settle calls, nothing more. */
  settles_to_wallet: number;
  status: OperatorStatus;
  mode: OperatorMode;
  settings: string;
  created_at: number;
}

/** The fields a change may set besides updated_at. */
export type OperatorChange =
  | { status: OperatorStatus }
  | { wallet_url: string; settles_to_wallet: 1 }
  | { wallet_url: null }
  | { settings: string }
  | { secret_enc: string; previous_secret_enc: string | null; previous_secret_expires_at: number | null };

export const operatorRepository = {
  async insert(
    tx: SqlExecutor,
    o: Omit<OperatorRow, 'status' | 'previous_secret_enc' | 'previous_secret_expires_at' | 'settles_to_wallet'>,
  ): Promise<void> {
    await tx.run(
      `INSERT INTO operators (id, name, api_key, secret_enc, wallet_url, settles_to_wallet, status, mode, settings,
         created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)`,
      [
        o.id,
        o.name,
        o.api_key,
        o.secret_enc,
        o.wallet_url,
        o.wallet_url === null ? 0 : 1,
        o.mode,
        o.settings,
        o.created_at,
        o.created_at,
      ],
    );
  },

  async list(db: SqlExecutor): Promise<OperatorRow[]> {
    return db.all<OperatorRow>('SELECT * FROM operators ORDER BY created_at, id');
  },

  async byId(db: SqlExecutor, id: string): Promise<OperatorRow | undefined> {
    return db.get<OperatorRow>('SELECT * FROM operators WHERE id = ?', [id]);
  },

  /** Whether the operator exists, without reading its row (what a child row's owner check needs). */
  async exists(db: SqlExecutor, id: string): Promise<boolean> {
    return (await db.get<{ id: string }>('SELECT id FROM operators WHERE id = ?', [id])) !== undefined;
  },

  /** Each of these operators' mode, as `test` or not (an unknown id is left out). */
  async testModes(db: SqlExecutor, ids: readonly string[]): Promise<{ id: string; test: boolean }[]> {
    const marks = ids.map(() => '?').join(', ');
    const sql = `SELECT id, mode FROM operators WHERE id IN (${marks})`;
    const rows = await db.all<{ id: string; mode: string }>(sql, ids);
    return rows.map((r) => ({ id: r.id, test: r.mode === 'test' }));
  },

  async byApiKey(db: SqlExecutor, apiKey: string): Promise<OperatorRow | undefined> {
    return db.get<OperatorRow>('SELECT * FROM operators WHERE api_key = ?', [apiKey]);
  },

  /** Applies a change; resolves false when there is no such operator. */
  async update(tx: SqlExecutor, id: string, change: OperatorChange, now: number): Promise<boolean> {
    const columns = Object.keys(change) as (keyof OperatorChange)[];
    const sets = [...columns.map((c) => `${c} = ?`), 'updated_at = ?'].join(', ');
    const values = columns.map((c) => (change as Record<string, string | number | null>)[c] ?? null);
    const r = await tx.run(`UPDATE operators SET ${sets} WHERE id = ?`, [...values, now, id]);
    return r.changes > 0;
  },
};
