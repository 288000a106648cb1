import { PostgresAdapter, sql, type Kysely } from 'kysely';
import { applyMoneyFunctions } from '../postgres/money-functions';
import * as m008 from './008_cash_out_timing_precheck';
import * as m009 from './009_cash_out_batches';

/**
 * Multipliers in hundredths outgrow a 32-bit integer: 2^31 - 1 hundredths is 21,474,836.47x, and a
 * Crash round can run past that (a seed's crash point goes up to 2^53 - 1 hundredths; about one round
 * in 22 million busts beyond 2^31 - 1) while a bet stays in: one of 1 minor unit under a per-bet cap of
 * 25,000,000 is forced out at 25,000,000.00x. SQLite's integers are 64-bit already; on PostgreSQL the bets columns
 * `cashout_multiplier` and `auto_cashout` become bigint, like the money beside them, and so do the
 * money functions' parameters and casts that carry them: each is created from its file
 * (store/postgres/sql), an older signature dropped first, as CREATE OR REPLACE would add an overload
 * beside it. bigint reads back as a number (store/postgres.ts parses int8), as amount and payout do.
 */
const CASH_OUT_HEAD = `text, text, text, text, bigint, integer, text, text, text, bigint`;
const CASH_OUT_TAIL = `text, bigint, text, text, bigint, text, integer, integer, bigint, bigint`;
const CASH_OUT_INTEGER = `rbs_cash_out(${CASH_OUT_HEAD}, integer, ${CASH_OUT_TAIL})`;
const CASH_OUT_BIGINT = `rbs_cash_out(${CASH_OUT_HEAD}, bigint, ${CASH_OUT_TAIL})`;
/** rbs_place_bet as migration 013 created it before its auto cash-out became bigint. */
const PLACE_BET_INTEGER = `rbs_place_bet(text, text, text, text, bigint, integer, text, text, text, text, integer,
  text, text, text, text, text, text, text, bigint, integer, text, text, integer, bigint, bigint)`;

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await db.schema
    .alterTable('bets')
    .alterColumn('cashout_multiplier', (c) => c.setDataType('bigint'))
    .execute();
  await db.schema
    .alterTable('bets')
    .alterColumn('auto_cashout', (c) => c.setDataType('bigint'))
    .execute();
  await sql.raw(`DROP FUNCTION IF EXISTS ${CASH_OUT_INTEGER}`).execute(db);
  await sql.raw(`DROP FUNCTION IF EXISTS ${PLACE_BET_INTEGER}`).execute(db);
  await applyMoneyFunctions(db, [
    'rbs_cash_out',
    'rbs_cash_outs',
    'rbs_place_bet',
    'rbs_place_bets_each',
    'rbs_place_bets',
  ]);
}

/**
 * Back to integer: fails, as it should, while a bet holds a multiplier past 2^31 - 1 hundredths. The
 * cash-out functions go back to migrations 008 and 009; the place-bet functions keep their bigint
 * auto cash-out, which the integer column takes by assignment.
 */
export async function down(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(`DROP FUNCTION IF EXISTS ${CASH_OUT_BIGINT}`).execute(db);
  await m008.up(db);
  await m009.up(db);
  await db.schema
    .alterTable('bets')
    .alterColumn('cashout_multiplier', (c) => c.setDataType('integer'))
    .execute();
  await db.schema
    .alterTable('bets')
    .alterColumn('auto_cashout', (c) => c.setDataType('integer'))
    .execute();
}
