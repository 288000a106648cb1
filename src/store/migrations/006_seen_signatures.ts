import type { Kysely } from 'kysely';

/**
 * Request signatures already accepted, kept for the signature tolerance window: a byte-identical
 * replay of a signed request is refused unless it is the idempotent retry of the same request.
 * - `seen_signatures`: calls without an idempotency key (session launch, webhook endpoint writes,
 *   secret rotation); rows past `expires_at` mean nothing and are purged;
 * - `idempotency_keys.signature`: idempotency-keyed calls (place-bet, cash-out) record their
 *   signature on the key row they write anyway, in the same transaction: a unique index refuses
 *   the same signature under a second key at no extra statement or commit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('seen_signatures')
    .addColumn('signature', 'text', (c) => c.primaryKey())
    .addColumn('binding', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('seen_signatures_expires').on('seen_signatures').column('expires_at').execute();
  await db.schema.alterTable('idempotency_keys').addColumn('signature', 'text').execute();
  await db.schema
    .createIndex('idempotency_keys_signature')
    .on('idempotency_keys')
    .column('signature')
    .unique()
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('idempotency_keys_signature').execute();
  await db.schema.alterTable('idempotency_keys').dropColumn('signature').execute();
  await db.schema.dropTable('seen_signatures').execute();
}
