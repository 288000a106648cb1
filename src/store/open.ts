import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/config';
import { addressForMessages, DependencyUnavailableError, StoreNotFoundError } from '../errors/unavailable';
import type { Database } from './database';
import { isMigrated, migrate } from './migrate';
import { PostgresDatabase } from './postgres';
import { SqliteDatabase } from './sqlite';

/**
 * How long PostgreSQL has to accept a login and answer at start. Far above a healthy login (a few
 * milliseconds; a TLS handshake across regions well under a second), short enough that a server that
 * accepts the connection and then says nothing ends the start with a message instead of a hang.
 */
const STORE_CONNECT_TIMEOUT_MS = 10_000;

type StoreConfig = Pick<Config, 'databaseUrl' | 'dataDir'> &
  Partial<Pick<Config, 'databasePoolSize' | 'storeTimeoutMs'>>;

/** Where a configuration's store is, for messages: the SQLite file or the PostgreSQL address, never a password. */
export function storeLocation(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  return config.databaseUrl
    ? `PostgreSQL at ${addressForMessages(config.databaseUrl, '5432')} (DATABASE_URL)`
    : `SQLite at ${join(config.dataDir, 'service.db')} (DATA_DIR)`;
}

/**
 * Embedded SQLite under DATA_DIR by default; PostgreSQL when DATABASE_URL says so. Migrates on open.
 * `mustExist` refuses (StoreNotFoundError) a store nothing has created yet, instead of creating it.
 */
export async function openDatabase(
  config: StoreConfig,
  options: { schema?: string; mustExist?: boolean } = {},
): Promise<Database> {
  const sqliteFile = join(config.dataDir, 'service.db');
  if (options.mustExist && !config.databaseUrl && !existsSync(sqliteFile)) {
    throw new StoreNotFoundError(`no store at ${storeLocation(config)}`);
  }
  const db = config.databaseUrl
    ? await openPostgres(config.databaseUrl, options.schema, config.databasePoolSize, config.storeTimeoutMs)
    : openSqlite(sqliteFile);
  try {
    if (options.mustExist && !(await isMigrated(db))) {
      throw new StoreNotFoundError(`no store at ${storeLocation(config)}: the database has no service tables`);
    }
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
