import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * Multipliers in hundredths outgrow a 32-bit integer: 2^31 - 1 hundredths is 21,474,836.47x, and a
 * Crash round can run past that (a seed's crash point goes up to 2^53 - 1 hundredths; about one round
 * in 22 million busts beyond 2^31 - 1) while a bet stays in: one of 1 minor unit under a per-bet cap of
 * 25,000,000 is forced out at 25,000,000.00x. SQLite's integers are 64-bit already; on PostgreSQL the bets columns
 * `cashout_multiplier` and `auto_cashout` become bigint, like the money beside them, and so do the
 * bet-command functions' parameters and casts that carry them (migrations 007 to 010 and 013).
 *
 * Each function is read back from the catalog whole (pg_get_functiondef, its SET options included)
 * and created again with only its types changed; `edit` checks that each change applies exactly once.
 * A function whose parameter types change is dropped first, as CREATE OR REPLACE would add an
 * overload beside it. The plpgsql callers (rbs_cash_outs, rbs_place_bets_each) resolve the callee by
 * name when they run, so dropping it breaks nothing in between; all of it runs in one transaction.
 * bigint reads back as a number (store/postgres.ts parses int8), as amount and payout do.
 */
interface Rewrite {
  /** The function as its identity signature names it before this migration. */
  before: string;
  /** The same after it (equal when only the body changes). */
  after: string;
  edits: [string, string][];
}

const CASH_OUT_HEAD = `text, text, text, text, bigint, integer, text, text, text, bigint`;
const CASH_OUT_TAIL = `text, bigint, text, text, bigint, text, integer, integer, bigint, bigint`;
const PLACE_BET_HEAD = `text, text, text, text, bigint, integer, text, text, text, text, integer, text, text, text,
  text, text, text, text, bigint`;
const PLACE_BET_TAIL = `text, text, integer, bigint, bigint`;

const REWRITES: Rewrite[] = [
  {
    before: `rbs_cash_out(${CASH_OUT_HEAD}, integer, ${CASH_OUT_TAIL})`,
    after: `rbs_cash_out(${CASH_OUT_HEAD}, bigint, ${CASH_OUT_TAIL})`,
    edits: [['p_multiplier integer', 'p_multiplier bigint']],
  },
  // Argument 10 of each command is rbs_cash_out's p_multiplier.
  { before: 'rbs_cash_outs(jsonb)', after: 'rbs_cash_outs(jsonb)', edits: [['(c->>10)::integer', '(c->>10)::bigint']] },
  {
    before: `rbs_place_bet(${PLACE_BET_HEAD}, integer, ${PLACE_BET_TAIL})`,
    after: `rbs_place_bet(${PLACE_BET_HEAD}, bigint, ${PLACE_BET_TAIL})`,
    edits: [['p_auto_cashout integer', 'p_auto_cashout bigint']],
  },
  // Argument 19 of each command is rbs_place_bet's p_auto_cashout.
  {
    before: 'rbs_place_bets_each(jsonb)',
    after: 'rbs_place_bets_each(jsonb)',
    edits: [['(c->>19)::integer', '(c->>19)::bigint']],
  },
  {
    before: 'rbs_place_bets(jsonb)',
    after: 'rbs_place_bets(jsonb)',
    edits: [['(t.c->>19)::integer', '(t.c->>19)::bigint']],
  },
];

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
  for (const rewrite of REWRITES) await rewriteFunction(db, rewrite, 'forward');
}

/** Back to integer: fails, as it should, while a bet holds a multiplier past 2^31 - 1 hundredths. */
export async function down(db: Kysely<unknown>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  for (const rewrite of REWRITES) await rewriteFunction(db, rewrite, 'back');
  await db.schema
    .alterTable('bets')
    .alterColumn('cashout_multiplier', (c) => c.setDataType('integer'))
    .execute();
  await db.schema
    .alterTable('bets')
    .alterColumn('auto_cashout', (c) => c.setDataType('integer'))
    .execute();
}

async function rewriteFunction(db: Kysely<unknown>, rewrite: Rewrite, direction: 'forward' | 'back'): Promise<void> {
  const [from, to] = direction === 'forward' ? [rewrite.before, rewrite.after] : [rewrite.after, rewrite.before];
  const definition = edit(await definitionOf(db, from), rewrite.edits, direction);
  if (from !== to) await sql.raw(`DROP FUNCTION ${from}`).execute(db);
  await sql.raw(definition).execute(db);
}

/** CREATE OR REPLACE FUNCTION … of the function with this signature, found through the search path. */
async function definitionOf(db: Kysely<unknown>, signature: string): Promise<string> {
  const { rows } = await sql<{ definition: string | null }>`
    SELECT pg_get_functiondef(to_regprocedure(${signature.replace(/\s+/g, ' ')})) AS definition`.execute(db);
  const definition = rows[0]?.definition;
  if (!definition) throw new Error(`migration 014: no function ${signature}`);
  return definition;
}

/** Applies each (before, after) pair, or its reverse; each must match exactly once, or nothing is changed. */
function edit(definition: string, edits: [string, string][], direction: 'forward' | 'back'): string {
  let out = definition;
  for (const [before, after] of edits) {
    const [from, to] = direction === 'forward' ? [before, after] : [after, before];
    const count = out.split(from).length - 1;
    if (count !== 1) throw new Error(`migration 014: "${from}" occurs ${count} times, expected once`);
    out = out.replace(from, to);
  }
  return out;
}
