import type { Kysely } from 'kysely';

/**
 * The public record of each hash chain: its commitment (the terminating hash) with the time it was
 * published, then the contribution that fixed the salt and the salt itself, then the first index
 * played. Chains generated before this record existed have no row and are never played again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('fair_chain_records')
    .addColumn('chain_id', 'text', (c) => c.primaryKey())
    .addColumn('game', 'text', (c) => c.notNull())
    .addColumn('length', 'integer', (c) => c.notNull())
    // 'generated' by the service, or 'fixture': seeds a test wrote in, never playable outside tests.
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('commitment', 'text', (c) => c.notNull())
    .addColumn('committed_at', 'bigint', (c) => c.notNull())
    .addColumn('contribution', 'text')
    .addColumn('contributor', 'text')
    .addColumn('contribution_automatic', 'integer')
    .addColumn('salt', 'text')
    .addColumn('salt_fixed_at', 'bigint')
    .addColumn('first_played_idx', 'integer')
    .addColumn('first_played_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('fair_chain_records_game')
    .on('fair_chain_records')
    .columns(['game', 'committed_at'])
    .execute();
  await db.schema.createIndex('rounds_chain_idx').on('rounds').columns(['chain_id', 'chain_idx']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('rounds_chain_idx').execute();
  await db.schema.dropTable('fair_chain_records').execute();
}
