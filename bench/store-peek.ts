/**
 * The bench's own connection to the store the service child is using, through the project's
 * adapters: to count what the load actually wrote, and to set up the cash-out case. It never runs
 * while a measured load is in flight.
 */
import { join } from 'node:path';
import type { Database } from '../src/store/database';
import { PostgresDatabase } from '../src/store/postgres';
import { SqliteDatabase } from '../src/store/sqlite';
import type { Store } from './processes';

export function openStore(store: Store): Database {
  if (store.kind === 'sqlite') return new SqliteDatabase({ filename: join(store.dataDir, 'service.db') });
  return new PostgresDatabase({ connectionString: store.databaseUrl!, poolSize: 8 });
}

export async function countBets(
  db: Database,
  operatorId: string,
  where = '',
  params: (string | number)[] = [],
): Promise<number> {
  const row = await db.get<{ n: number }>(
    `SELECT COUNT(*) AS n FROM bets WHERE operator_id = ?${where ? ` AND ${where}` : ''}`,
    [operatorId, ...params],
  );
  return Number(row?.n ?? 0);
}

export async function countIdempotencyKeys(db: Database, operatorId: string): Promise<number> {
  const row = await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM idempotency_keys WHERE operator_id = ?', [
    operatorId,
  ]);
  return Number(row?.n ?? 0);
}
