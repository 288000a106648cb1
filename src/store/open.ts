import { join } from 'node:path';
import type { Config } from '../config/config';
import { addressForMessages, DependencyUnavailableError } from '../errors/unavailable';
import type { Database } from './database';
import { migrate } from './migrate';
import { PostgresDatabase } from './postgres';
import { SqliteDatabase } from './sqlite';

/**
 * How long PostgreSQL has to accept a login and answer at start. Far above a healthy login (a few
 * milliseconds; a TLS handshake across regions well under a second), short enough that a server that
 * accepts the connection and then says nothing ends the start with a message instead of a hang.
 */
const STORE_CONNECT_TIMEOUT_MS = 10_000;

/** Embedded SQLite under DATA_DIR by default; PostgreSQL when DATABASE_URL says so. Migrates on open. */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> & Partial<Pick<Config, 'databasePoolSize' | 'storeTimeoutMs'>>,
  options: { schema?: string } = {},
): Promise<Database> {
  const db = config.databaseUrl
    ? await openPostgres(config.databaseUrl, options.schema, config.databasePoolSize, config.storeTimeoutMs)
    : openSqlite(join(config.dataDir, 'service.db'));
  try {
    await migrate(db);
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
  return db;
}

async function openPostgres(
  url: string,
  schema: string | undefined,
  poolSize: number | undefined,
  timeoutMs: number | undefined,
): Promise<PostgresDatabase> {
  const db = new PostgresDatabase({ connectionString: url, schema, poolSize, timeoutMs });
  try {
    await db.checkAnswers(STORE_CONNECT_TIMEOUT_MS);
  } catch (error) {
    await db.close().catch(() => {});
    const reason = isTimeout(error)
      ? `no answer within ${STORE_CONNECT_TIMEOUT_MS / 1000} s`
      : (error as Error).message || String(error);
    throw new DependencyUnavailableError(
      `cannot connect to PostgreSQL at ${addressForMessages(url)} (DATABASE_URL): ${reason}`,
    );
  }
  return db;
}

/** Creating DATA_DIR and opening the file: a path that is not a directory, no permission, a read-only mount. */
function openSqlite(filename: string): SqliteDatabase {
  try {
    return new SqliteDatabase({ filename });
  } catch (error) {
    const reason = (error as Error).message || String(error);
    throw new DependencyUnavailableError(`cannot open the SQLite store at ${filename} (DATA_DIR): ${reason}`);
  }
}

/** node-postgres says "timeout expired" or "Connection terminated due to connection timeout", depending on where. */
function isTimeout(error: unknown): boolean {
  return /timeout/i.test((error as Error)?.message ?? '');
}
