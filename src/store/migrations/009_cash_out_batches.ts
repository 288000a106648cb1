import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * PostgreSQL: rbs_cash_outs runs several Crash cash-outs in one call and one transaction (one commit,
 * one WAL flush for the lot), as rbs_place_bets does for bets (see games/crash/crash-bet-commands.ts).
 * Each command is rbs_cash_out (migration 008) with its 21 arguments, in order, and the answers come
 * back as a JSON array in the same order.
 *
 * - rbs_cash_out aborts with SQLSTATE RB001 after it may have written (the key, the bet) when the
 *   full path must run. Each command therefore runs in a block of its own: RB001 rolls back that
 *   command alone, which answers {"outcome":"full_path"}, and the others still commit. Two cash-outs
 *   of one bet in a call then behave as one after the other: the second finds the bet cashed out,
 *   raises RB001, and the full path answers it as it would have answered it alone.
 * - A settlement first takes its bet row with SKIP LOCKED; a bet locked by another transaction (the
 *   engine settling it, another instance's cash-out) answers full_path at once instead of waiting.
 *   A call holds the locks of every bet it has settled so far, and the engine settles several bets
 *   of a round in one transaction in its own order: waiting on a bet while holding others could close
 *   a cycle with it, a deadlock PostgreSQL breaks only after deadlock_timeout by aborting one side.
 *   Alone (rbs_cash_out) a cash-out holds one bet and may wait; the full path does the same.
 * - Any other error (a deadlock on the idempotency keys, a serialization failure) aborts the whole
 *   call with nothing written; the service sends each of its commands again on its own.
 *
 * SQLite needs none of this: its commands run as synchronous units inside the group commit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;

  await sql`
CREATE OR REPLACE FUNCTION rbs_cash_outs(p_commands jsonb) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  c jsonb;
  v_answer jsonb;
  v_out jsonb := '[]'::jsonb;
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(p_commands) LOOP
    BEGIN
      -- A refusal (argument 6 set) writes only its key and needs no bet row.
      IF c->>5 IS NULL THEN
        PERFORM 1 FROM bets WHERE id = c->>7 FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'bet % is missing or locked by another transaction', c->>7 USING ERRCODE = 'RB001';
        END IF;
      END IF;
      v_answer := rbs_cash_out(
        c->>0, c->>1, c->>2, c->>3, (c->>4)::bigint, (c->>5)::integer, c->>6,
        c->>7, c->>8, (c->>9)::bigint, (c->>10)::integer, c->>11, (c->>12)::bigint,
        c->>13, c->>14, (c->>15)::bigint, c->>16, (c->>17)::integer,
        (c->>18)::integer, (c->>19)::bigint, (c->>20)::bigint);
    EXCEPTION WHEN SQLSTATE 'RB001' THEN
      v_answer := jsonb_build_object('outcome', 'full_path');
    END;
    v_out := v_out || jsonb_build_array(v_answer);
  END LOOP;
  RETURN v_out;
END
$fn$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`DROP FUNCTION IF EXISTS rbs_cash_outs`.execute(db);
}
