import { sql, type Kysely } from 'kysely';

/**
 * A compliance flag can be acknowledged, so the dashboard's flag list serves as a work queue: when
 * (`acknowledged_at`, ms) and by whom (`acknowledged_by`: a dashboard user's email, or `admin:<name>`
 * from the admin CLI). Both stay null while the flag is open; the first acknowledgement is kept.
 *
 * The list pages newest first by (created_at DESC, id) under one operator: the index is in that very
 * order and carries the id, so a page that starts inside a run of flags sharing a created_at (one
 * round's close raises many) is read in one forward range, without a sort. The partial index holds only
 * the open flags, so "open only" stays one index range however many acknowledged flags pile up behind it.
 * SQLite and PostgreSQL both support partial indexes with this syntax.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('compliance_flags').addColumn('acknowledged_at', 'bigint').execute();
  await db.schema.alterTable('compliance_flags').addColumn('acknowledged_by', 'text').execute();
  await db.schema
    .createIndex('compliance_flags_operator_page')
    .on('compliance_flags')
    .columns(['operator_id', 'created_at desc', 'id'])
    .execute();
  await db.schema
    .createIndex('compliance_flags_operator_open')
    .on('compliance_flags')
    .columns(['operator_id', 'created_at desc', 'id'])
    .where(sql.ref('acknowledged_at'), 'is', null)
    .execute();
  // The page index covers what the old (operator_id, created_at) one served.
  await db.schema.dropIndex('compliance_flags_operator').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('compliance_flags_operator')
    .on('compliance_flags')
    .columns(['operator_id', 'created_at'])
    .execute();
  await db.schema.dropIndex('compliance_flags_operator_open').execute();
  await db.schema.dropIndex('compliance_flags_operator_page').execute();
  await db.schema.alterTable('compliance_flags').dropColumn('acknowledged_by').execute();
  await db.schema.alterTable('compliance_flags').dropColumn('acknowledged_at').execute();
}
