import type { Kysely } from 'kysely';

/**
 * Request signatures already accepted, kept for the signature tolerance window: a byte-identical
 * replay of a signed request is refused unless it is the idempotent retry of the same request
 * (same Idempotency-Key, recorded as `binding`). Rows past `expires_at` mean nothing and are purged.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('seen_signatures')
    .addColumn('signature', 'text', (c) => c.primaryKey())
    .addColumn('binding', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('seen_signatures_expires').on('seen_signatures').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('seen_signatures').execute();
}
