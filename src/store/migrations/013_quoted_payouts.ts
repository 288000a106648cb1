import { PostgresAdapter, sql, type Kysely } from 'kysely';
import { applyMoneyFunctions } from '../postgres/money-functions';
import * as m007 from './007_bet_commands';
import * as m008 from './008_cash_out_timing_precheck';
import * as m010 from './010_set_based_place_bets';

/**
 * A Stock Race bet keeps the payout its reserve answer quoted (`potential_payout`): the close pays
 * that, not what the operator's settings of the moment would give, so an RTP or cap changed during
 * the betting window neither cuts the pay of bets already accepted nor raises the operator's
 * exposure past what it booked. Crash bets quote nothing (null), as do Stock Race bets reserved
 * before this migration, which the close pays under the settings in force then, as before.
 *
 * PostgreSQL: the place-bet functions write the new column. rbs_place_bet takes it as a 25th
 * argument, so its signature changes (dropped, then created from its file); rbs_place_bets_each
 * passes it on and rbs_place_bets inserts it (their files, store/postgres/sql).
 */
const PLACE_BET_24 = `text, text, text, text, bigint, integer, text, text, text, text, integer, text, text, text,
  text, text, text, text, bigint, integer, text, text, integer, bigint`;
/** rbs_place_bet as its file defines it (migration 014 made the auto cash-out bigint). */
const PLACE_BET_25 = `text, text, text, text, bigint, integer, text, text, text, text, integer, text, text, text,
  text, text, text, text, bigint, bigint, text, text, integer, bigint, bigint`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('bets').addColumn('potential_payout', 'bigint').execute();
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(`DROP FUNCTION rbs_place_bet(${PLACE_BET_24})`).execute(db);
  await applyMoneyFunctions(db, ['rbs_place_bet', 'rbs_place_bets_each', 'rbs_place_bets']);
}

/** Back to the place-bet functions of migrations 007 and 010, which write no quote. */
export async function down(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql.raw(`DROP FUNCTION IF EXISTS rbs_place_bet(${PLACE_BET_25})`).execute(db);
    await sql`DROP FUNCTION IF EXISTS rbs_place_bets(jsonb)`.execute(db);
    await sql`DROP FUNCTION IF EXISTS rbs_place_bets_each(jsonb)`.execute(db);
    // 007 creates its rbs_cash_out too: 008's, the one before 014, goes back over it.
    await m007.up(db);
    await m008.up(db);
    await m010.up(db);
  }
  await db.schema.alterTable('bets').dropColumn('potential_payout').execute();
}
