import type { Kysely } from 'kysely';

/**
 * The bets of a round are found by `round_id` alone. The old index on (round_id, status) moved an
 * entry every time a bet was settled: a cash-out deleted it from the round's active bets and
 * inserted it among the cashed-out ones, two random index pages written to the log (and copied by
 * the next checkpoint) for every cash-out, against three for everything else a cash-out writes.
 * The queries that filter on status as well read a round's bets once per round (at its end, on
 * recovery), so scanning the settled ones with them costs nothing that matters. On PostgreSQL a
 * settlement no longer changes an indexed column of this index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('bets_round').on('bets').column('round_id').execute();
  await db.schema.dropIndex('bets_round_status').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('bets_round_status').on('bets').columns(['round_id', 'status']).execute();
  await db.schema.dropIndex('bets_round').execute();
}
