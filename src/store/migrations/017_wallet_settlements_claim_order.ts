import type { Kysely } from 'kysely';

/**
 * The wallet outbox claims its due rows in (next_attempt_at, bet_id) order. The index on (status,
 * next_attempt_at) alone left the bet_id part to a sort of every due row at each claim: a round's
 * settlements are written with one next_attempt_at, so a claim of 16 sorted all 20,000 of them, and
 * the claims of one round cost its row count squared. With bet_id in the index, a claim reads its
 * rows in order and stops at its limit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('wallet_settlements_claim_order')
    .on('wallet_settlements')
    .columns(['status', 'next_attempt_at', 'bet_id'])
    .execute();
  await db.schema.dropIndex('wallet_settlements_due').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('wallet_settlements_due')
    .on('wallet_settlements')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema.dropIndex('wallet_settlements_claim_order').execute();
}
