import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * Test mode (sandbox operators):
 * - operators have a mode: `live` (every existing one) or `test`;
 * - a round belongs to the live world (operator_id NULL) or to one sandbox operator, and round
 *   numbers count per world: the live sequence never skips a number because a sandbox played;
 * - a sandbox round whose outcome was scripted says so (`scripted`), and events carry `livemode`;
 * - sandbox scripts (next outcomes), per-sandbox timing and simulated wallet state get their tables.
 *
 * SQLite cannot drop the (game, round_number) unique constraint of 001, so `rounds` is rebuilt
 * there, with foreign keys off for the copy (Kysely runs SQLite migrations outside a transaction,
 * so the pragma takes effect; the copy itself is one transaction).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('operators')
    .addColumn('mode', 'text', (c) => c.notNull().defaultTo('live'))
    .execute();
  await db.schema
    .alterTable('events')
    .addColumn('livemode', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();

  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await db.schema.alterTable('rounds').addColumn('operator_id', 'text').execute();
    await db.schema
      .alterTable('rounds')
      .addColumn('scripted', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('rounds').dropConstraint('rounds_game_number').execute();
  } else {
    await sql`PRAGMA foreign_keys = OFF`.execute(db);
    try {
      await db.transaction().execute(async (tx) => {
        await sql`CREATE TABLE rounds_next (
          id text PRIMARY KEY, game text NOT NULL, round_number bigint NOT NULL, status text NOT NULL,
          seed_hash text NOT NULL, seed text NOT NULL, chain_id text NOT NULL, chain_idx integer NOT NULL,
          opened_at bigint NOT NULL, betting_closes_at bigint NOT NULL, running_at bigint, ends_at bigint,
          closed_at bigint, voided_at bigint, void_reason text, outcome text, settings text NOT NULL,
          operator_id text, scripted integer NOT NULL DEFAULT 0)`.execute(tx);
        await sql`INSERT INTO rounds_next (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx,
          opened_at,
          betting_closes_at, running_at, ends_at, closed_at, voided_at, void_reason, outcome, settings)
          SELECT id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at, betting_closes_at,
          running_at, ends_at, closed_at, voided_at, void_reason, outcome, settings FROM rounds`.execute(tx);
        await sql`DROP TABLE rounds`.execute(tx);
        await sql`ALTER TABLE rounds_next RENAME TO rounds`.execute(tx);
      });
    } finally {
      await sql`PRAGMA foreign_keys = ON`.execute(db);
    }
    await db.schema.createIndex('rounds_game_status').on('rounds').columns(['game', 'status']).execute();
    // 003's index goes with the old table; the rebuilt one needs it again.
    await db.schema.createIndex('rounds_chain_idx').on('rounds').columns(['chain_id', 'chain_idx']).execute();
  }
  // One numbering for the live world, one per sandbox operator.
  await sql`CREATE UNIQUE INDEX rounds_live_number ON rounds (game, round_number) WHERE operator_id IS NULL`.execute(
    db,
  );
  await sql`CREATE UNIQUE INDEX rounds_sandbox_number ON rounds (operator_id, game, round_number)
    WHERE operator_id IS NOT NULL`.execute(db);

  // Outcomes a sandbox operator asked for, used in order by its next rounds that take a bet.
  await db.schema
    .createTable('sandbox_scripts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('operator_id', 'text', (c) => c.notNull())
    .addColumn('game', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('used_by_round', 'text')
    .execute();
  await db.schema
    .createIndex('sandbox_scripts_next')
    .on('sandbox_scripts')
    .columns(['operator_id', 'game', 'used_by_round', 'seq'])
    .execute();

  // Per-sandbox settings: round timing and the simulated wallet's failure switch.
  await db.schema
    .createTable('sandbox_settings')
    .addColumn('operator_id', 'text', (c) => c.primaryKey())
    .addColumn('timing', 'text', (c) => c.notNull())
    .addColumn('wallet', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  // The simulated wallet: a balance per player and currency (minor units), and the settle calls it
  // applied, by idempotency key, so a retried settle never credits twice.
  await db.schema
    .createTable('sandbox_wallet_balances')
    .addColumn('operator_id', 'text', (c) => c.notNull())
    .addColumn('player_ref', 'text', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('balance', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('sandbox_wallet_balances_pk', ['operator_id', 'player_ref', 'currency'])
    .execute();
  await db.schema
    .createTable('sandbox_wallet_settles')
    .addColumn('operator_id', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('bet_id', 'text', (c) => c.notNull())
    .addColumn('credited', 'bigint', (c) => c.notNull())
    .addColumn('applied_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('sandbox_wallet_settles_pk', ['operator_id', 'idempotency_key'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('004_sandbox is not reversible: restore from a backup instead');
}
