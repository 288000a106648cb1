import { sql, type Kysely } from 'kysely';

/**
 * Whether an operator settles Stock Race bets through its wallet, kept apart from the wallet URL
 * itself. Clearing the URL is how an administrator pauses the settle calls to a compromised
 * wallet (docs/security.md): the operator's players still wait for those settlements, so a round
 * that closes during the pause must still write them, to be sent once a URL is set again. An
 * operator that never had a wallet URL stays webhook-only. Operators with a URL today settle to it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('operators')
    .addColumn('settles_to_wallet', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`UPDATE operators SET settles_to_wallet = 1 WHERE wallet_url IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('operators').dropColumn('settles_to_wallet').execute();
}
