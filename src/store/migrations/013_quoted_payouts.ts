import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * A Stock Race bet keeps the payout its reserve answer quoted (`potential_payout`): the close pays
 * that, not what the operator's settings of the moment would give, so an RTP or cap changed during
 * the betting window neither cuts the pay of bets already accepted nor raises the operator's
 * exposure past what it booked. Crash bets quote nothing (null), as do Stock Race bets reserved
 * before this migration, which the close pays under the settings in force then, as before.
 *
 * PostgreSQL: the place-bet functions write the new column. rbs_place_bet takes it as a 25th
 * argument, so its signature changes (dropped and created again); rbs_place_bets_each passes it on,
 * and rbs_place_bets (migration 010) inserts it. Their bodies are those of migrations 007 and 010,
 * read back from the catalog and changed only where the bet is written or passed on (`edit` checks
 * that each change applies exactly once), so this migration does not restate 200 lines of SQL.
 */
const PLACE_BET_ARGS = `p_operator_id text, p_key text, p_hash text, p_signature text, p_now bigint,
  p_refusal_status integer, p_refusal_body text,
  p_game text, p_world text, p_round_id text, p_closed_status integer, p_closed_body text,
  p_ok_prefix text, p_ok_suffix text,
  p_bet_id text, p_player text, p_session_id text, p_currency text, p_amount bigint, p_auto_cashout integer,
  p_selections text, p_status text,
  p_velocity_limit integer, p_velocity_since bigint`;
const PLACE_BET_TYPES = `text, text, text, text, bigint, integer, text, text, text, text, integer, text, text, text,
  text, text, text, text, bigint, integer, text, text, integer, bigint`;

const COLUMNS_BEFORE = 'cashout_kind, placed_at, settled_at)';
const COLUMNS_AFTER = 'cashout_kind, placed_at, settled_at, potential_payout)';

/** (before, after) pairs applied to rbs_place_bet's body (migration 007). */
const PLACE_BET_EDITS: [string, string][] = [
  [COLUMNS_BEFORE, COLUMNS_AFTER],
  ['p_status, NULL, NULL, NULL, p_now, NULL)', 'p_status, NULL, NULL, NULL, p_now, NULL, p_potential_payout)'],
];
/** rbs_place_bets_each (007's loop, renamed by 010) passes the 25th element on. */
const EACH_EDITS: [string, string][] = [['(c->>23)::bigint));', '(c->>23)::bigint, (c->>24)::bigint));']];
/** rbs_place_bets (migration 010), the set-based call. */
const PLACE_BETS_EDITS: [string, string][] = [
  [COLUMNS_BEFORE, COLUMNS_AFTER],
  ['(t.c->>4)::bigint, NULL\n', '(t.c->>4)::bigint, NULL, (t.c->>24)::bigint\n'],
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('bets').addColumn('potential_payout', 'bigint').execute();
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await rewrite(db, 'forward');
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) await rewrite(db, 'back');
  await db.schema.alterTable('bets').dropColumn('potential_payout').execute();
}

async function rewrite(db: Kysely<unknown>, direction: 'forward' | 'back'): Promise<void> {
  const oldArgs = direction === 'forward' ? PLACE_BET_TYPES : `${PLACE_BET_TYPES}, bigint`;
  const newArgs = direction === 'forward' ? `${PLACE_BET_ARGS}, p_potential_payout bigint` : PLACE_BET_ARGS;
  const placeBet = edit(await bodyOf(db, `rbs_place_bet(${oldArgs})`), PLACE_BET_EDITS, direction);
  const each = edit(await bodyOf(db, 'rbs_place_bets_each(jsonb)'), EACH_EDITS, direction);
  const placeBets = edit(await bodyOf(db, 'rbs_place_bets(jsonb)'), PLACE_BETS_EDITS, direction);
  await sql.raw(`DROP FUNCTION rbs_place_bet(${oldArgs})`).execute(db);
  await sql
    .raw(`CREATE FUNCTION rbs_place_bet(${newArgs}) RETURNS jsonb LANGUAGE plpgsql AS $fn$${placeBet}$fn$`)
    .execute(db);
  await sql
    .raw(`CREATE OR REPLACE FUNCTION rbs_place_bets_each(p_commands jsonb) RETURNS jsonb LANGUAGE plpgsql
      AS $fn$${each}$fn$`)
    .execute(db);
  // 010's setting, restated: CREATE OR REPLACE sets the function's configuration afresh.
  await sql
    .raw(`CREATE OR REPLACE FUNCTION rbs_place_bets(p_commands jsonb) RETURNS jsonb LANGUAGE plpgsql
      SET plan_cache_mode = force_generic_plan AS $fn$${placeBets}$fn$`)
    .execute(db);
}

/** The body of the function with this signature, found through the search path (the schema being migrated). */
async function bodyOf(db: Kysely<unknown>, signature: string): Promise<string> {
  const { rows } = await sql<{ body: string | null }>`
    SELECT (SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure(${signature.replace(/\s+/g, ' ')})) AS body`.execute(
    db,
  );
  const body = rows[0]?.body;
  if (!body) throw new Error(`migration 013: no function ${signature}`);
  return body;
}

/** Applies each (before, after) pair, or its reverse; each must match exactly once, or nothing is changed. */
function edit(body: string, edits: [string, string][], direction: 'forward' | 'back'): string {
  let out = body;
  for (const [before, after] of edits) {
    const [from, to] = direction === 'forward' ? [before, after] : [after, before];
    const count = out.split(from).length - 1;
    if (count !== 1) throw new Error(`migration 013: "${from}" occurs ${count} times, expected once`);
    out = out.replace(from, to);
  }
  if (out.includes('$fn$')) throw new Error('migration 013: a function body holds its own quote mark');
  return out;
}
