import type { Kysely } from 'kysely';

/**
 * Webhook delivery and compliance additions:
 * - an attempt number is logged at most once per delivery (two workers can never both own it);
 * - a re-sent dead letter is a new delivery that points at the one it replaces;
 * - listings by operator/status and the compliance look-backs get their indexes;
 * - the places a player session was used from, for the "several places at once" rule.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_attempts_delivery_attempt')
    .on('webhook_attempts')
    .columns(['delivery_id', 'attempt'])
    .unique()
    .execute();
  await db.schema.alterTable('webhook_deliveries').addColumn('resend_of', 'text').execute();
  await db.schema
    .createIndex('webhook_deliveries_operator_status')
    .on('webhook_deliveries')
    .columns(['operator_id', 'status', 'created_at'])
    .execute();
  await db.schema
    .createIndex('compliance_flags_rule_player')
    .on('compliance_flags')
    .columns(['operator_id', 'rule', 'player', 'created_at'])
    .execute();
  await db.schema
    .createTable('compliance_session_places')
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('place', 'text', (c) => c.notNull())
    .addColumn('operator_id', 'text', (c) => c.notNull())
    .addColumn('first_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('compliance_session_places_pk', ['session_id', 'place'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('compliance_session_places').execute();
  await db.schema.dropIndex('compliance_flags_rule_player').execute();
  await db.schema.dropIndex('webhook_deliveries_operator_status').execute();
  await db.schema.alterTable('webhook_deliveries').dropColumn('resend_of').execute();
  await db.schema.dropIndex('webhook_attempts_delivery_attempt').execute();
}
