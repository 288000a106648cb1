import type { Kysely } from 'kysely';

/**
 * The last time the engine holding a game's lease recorded that a running round was alive. A
 * cash-out on any instance pays only while this is recent: a round whose engine is gone (a killed
 * process, a leader that lost its lease) is voided and refunded, never paid at a multiplier that
 * kept "climbing" while nothing ran. Null for rounds that never ran (and those from before).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('rounds').addColumn('heartbeat_at', 'bigint').execute();
}
