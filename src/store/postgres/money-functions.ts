import { readFileSync } from 'node:fs';
import { sql, type Kysely } from 'kysely';

/**
 * The PostgreSQL functions behind the one-unit money commands. Each one's whole current definition
 * is the file sql/<name>.sql (a CREATE OR REPLACE FUNCTION statement): migrations apply the files,
 * never text read back from the catalog, and a test compares what is deployed with them.
 */
export const MONEY_FUNCTIONS = [
  'rbs_claim_key',
  'rbs_place_bet',
  'rbs_place_bets_each',
  'rbs_place_bets',
  'rbs_cash_out',
  'rbs_cash_outs',
] as const;

export type MoneyFunction = (typeof MONEY_FUNCTIONS)[number];

/** The file's text: the function's definition, after a comment saying what it is for. */
export function moneyFunctionSource(name: MoneyFunction): string {
  return readFileSync(new URL(`./sql/${name}.sql`, import.meta.url), 'utf8');
}

/** Creates or replaces each function from its file, in the schema being migrated (the search path). */
export async function applyMoneyFunctions(db: Kysely<unknown>, names: readonly MoneyFunction[]): Promise<void> {
  for (const name of names) await sql.raw(moneyFunctionSource(name)).execute(db);
}
