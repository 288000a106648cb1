import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Migration, type MigrationProvider } from 'kysely';
import * as m001 from './migrations/001_initial';
import * as m002webhooks from './migrations/002_webhook_pipeline';
import type { SqlExecutor } from './database';
import * as m003chains from './migrations/003_chain_commitments';
import * as m004sandbox from './migrations/004_sandbox';
import * as m005heartbeat from './migrations/005_round_heartbeat';
import * as m006seen from './migrations/006_seen_signatures';
import * as m007commands from './migrations/007_bet_commands';
import * as m008timing from './migrations/008_cash_out_timing_precheck';
import * as m009cashouts from './migrations/009_cash_out_batches';
import * as m010setbets from './migrations/010_set_based_place_bets';
import * as m011betsround from './migrations/011_bets_round_index';
import * as m012walletoperators from './migrations/012_wallet_operators';
import * as m013quotedpayouts from './migrations/013_quoted_payouts';
import * as m014bigintmultipliers from './migrations/014_bigint_multipliers';
import * as m015flagacks from './migrations/015_compliance_flag_acknowledgements';
import * as m016moneyfunctions from './migrations/016_money_functions_from_files';
import * as m017walletclaimorder from './migrations/017_wallet_settlements_claim_order';
import type { PostgresDatabase } from './postgres';
import type { SqliteDatabase } from './sqlite';

/**
 * Migrations are TypeScript modules in ./migrations, listed here so they ship inside the bundle
 * and run in a fixed order. Kysely's Migrator records applied ones in `kysely_migration` and holds
 * a lock while migrating, so several instances starting together apply each migration once.
 */
const MIGRATIONS: Record<string, Migration> = {
  '001_initial': m001,
  '002_webhook_pipeline': m002webhooks,
  '003_chain_commitments': m003chains,
  '004_sandbox': m004sandbox,
  '005_round_heartbeat': m005heartbeat,
  '006_seen_signatures': m006seen,
  '007_bet_commands': m007commands,
  '008_cash_out_timing_precheck': m008timing,
  '009_cash_out_batches': m009cashouts,
  '010_set_based_place_bets': m010setbets,
  '011_bets_round_index': m011betsround,
  '012_wallet_operators': m012walletoperators,
  '013_quoted_payouts': m013quotedpayouts,
  '014_bigint_multipliers': m014bigintmultipliers,
  '015_compliance_flag_acknowledgements': m015flagacks,
  '016_money_functions_from_files': m016moneyfunctions,
  '017_wallet_settlements_claim_order': m017walletclaimorder,
};

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

export async function migrate(db: SqliteDatabase | PostgresDatabase): Promise<string[]> {
  if (db.dialect === 'sqlite') {
    return runMigrations(db, new Kysely<unknown>({ dialect: new SqliteDialect({ database: db.raw }) }));
  }
  // A pool of the migrations' own, without the deadline the service's statements have.
  const pool = db.migrationPool();
  try {
    return await runMigrations(db, new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) }));
  } finally {
    await pool.end();
  }
}

async function runMigrations(db: SqliteDatabase | PostgresDatabase, kysely: Kysely<unknown>): Promise<string[]> {
  // Kysely finds its bookkeeping tables by introspection across schemas: name ours explicitly so
  // databases holding several schemas (one per test run, say) never mistake another's for ours.
  const migrator = new Migrator({
    db: kysely,
    provider,
    ...(db.dialect === 'postgres' ? { migrationTableSchema: db.options.schema ?? (await currentSchema(db)) } : {}),
  });
  const { error, results } = await migrateWithRetry(migrator);
  if (error) throw error instanceof Error ? error : new Error(String(error));
  // The migrations changed tables behind the adapter's statement cache (they ran on db.raw).
  if (db.dialect === 'sqlite') db.schemaChanged();
  // The pool is ended by migrate(); on SQLite, Kysely's destroy would close the connection still in use.
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Whether migrations have ever run on this store (Kysely's bookkeeping table is there), in the schema
 * unqualified tables land in: a PostgreSQL database or schema nothing has set up yet answers false.
 */
export async function isMigrated(db: SqliteDatabase | PostgresDatabase): Promise<boolean> {
  if (db.dialect === 'sqlite') {
    const row = await db.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'kysely_migration'",
    );
    return Number(row?.n) > 0;
  }
  const row = await db.get<{ present: boolean | null }>(
    "SELECT to_regclass(quote_ident(current_schema()) || '.kysely_migration') IS NOT NULL AS present",
  );
  return row?.present === true;
}

/** The schema unqualified tables land in: the first of the connection's search_path (URL options included). */
async function currentSchema(db: PostgresDatabase): Promise<string> {
  const row = await db.get<{ schema: string | null }>('SELECT current_schema() AS schema');
  if (!row?.schema) throw new Error('the PostgreSQL search_path names no existing schema to migrate into');
  return row.schema;
}

// Kysely checks for its bookkeeping tables by listing every table in the database; a schema dropped
// by someone else during that query makes it fail (invalid_schema_name / undefined_table) although
// nothing is wrong with ours. Such a failure is retried; anything else, or a repeat, is real.
const TRANSIENT_CATALOG_ERRORS = new Set(['3F000', '42P01']);

async function migrateWithRetry(migrator: Migrator): Promise<Awaited<ReturnType<Migrator['migrateToLatest']>>> {
  for (let attempt = 1; ; attempt++) {
    const outcome = await migrator.migrateToLatest();
    const code = (outcome.error as { code?: string } | undefined)?.code;
    if (!outcome.error || !code || !TRANSIENT_CATALOG_ERRORS.has(code) || attempt >= 5) return outcome;
    await new Promise((r) => setTimeout(r, 50 * attempt));
  }
}

/** Migrations this build knows that the store has not recorded as applied (readiness check). */
export async function pendingMigrations(db: SqlExecutor): Promise<string[]> {
  const rows = await db.all<{ name: string }>('SELECT name FROM kysely_migration');
  const applied = new Set(rows.map((r) => r.name));
  return Object.keys(MIGRATIONS).filter((name) => !applied.has(name));
}
