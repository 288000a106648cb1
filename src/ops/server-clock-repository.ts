import type { SqlExecutor } from '../store/database';

/** The database server's clock, in milliseconds since the epoch (PostgreSQL: the instant of the call). */
export async function serverClockMs(db: SqlExecutor): Promise<number> {
  const row = await db.get<{ ms: number | string }>(
    'SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::float8 AS ms',
  );
  return Number(row?.ms);
}
