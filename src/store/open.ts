import { join } from 'node:path';
import type { Config } from '../config/config';
import type { Database } from './database';
import { migrate } from './migrate';
import { PostgresDatabase } from './postgres';
import { SqliteDatabase } from './sqlite';

/** Embedded SQLite under DATA_DIR by default; PostgreSQL when DATABASE_URL says so. Migrates on open. */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> & Partial<Pick<Config, 'databasePoolSize'>>,
  options: { schema?: string } = {},
): Promise<Database> {
  const db = config.databaseUrl
    ? new PostgresDatabase({
        connectionString: config.databaseUrl,
        schema: options.schema,
        poolSize: config.databasePoolSize,
      })
    : new SqliteDatabase({ filename: join(config.dataDir, 'service.db') });
  try {
    await migrate(db);
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
  return db;
}
