import { PostgresAdapter, type Kysely } from 'kysely';
import { applyMoneyFunctions, MONEY_FUNCTIONS } from '../postgres/money-functions';

/**
 * PostgreSQL: every money function as its file in store/postgres/sql says. A database migrated when
 * migrations 013 and 014 still patched function bodies read from the catalog ends with the same
 * definitions as a fresh one; a later change to a file comes with a migration that applies it again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await applyMoneyFunctions(db, MONEY_FUNCTIONS);
}

/** Nothing to undo: the files hold the definitions 013 and 014 left. */
export async function down(): Promise<void> {}
