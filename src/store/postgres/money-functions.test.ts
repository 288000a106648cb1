import { Kysely, PostgresDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../../../test/support/harness';
import * as m016 from '../migrations/016_money_functions_from_files';
import type { PostgresDatabase } from '../postgres';
import { MONEY_FUNCTIONS, type MoneyFunction, moneyFunctionSource } from './money-functions';

/**
 * The deployed money functions are their files, whitespace aside: pg_get_functiondef of each, from a
 * freshly migrated schema, against sql/<name>.sql without its leading comment.
 */
const normalised = (definition: string): string =>
  definition
    .replace(/^(--[^\n]*\n)+/, '')
    .replace(/\s+/g, ' ')
    .replace(/\( /g, '(')
    .replace(/ \)/g, ')')
    .trim();

describe('PostgreSQL money functions and their files', () => {
  let db: PostgresDatabase;
  let schema: string;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const fresh = await freshDatabase('postgres');
    db = fresh.db as PostgresDatabase;
    schema = fresh.schema!;
    dispose = fresh.dispose;
  });
  afterAll(async () => dispose?.());

  /** Every function of the schema by name: its definition as the catalog prints it, unqualified. */
  async function deployed(): Promise<Map<string, string>> {
    const rows = await db.all<{ name: string; definition: string }>(
      `SELECT p.proname AS name, pg_get_functiondef(p.oid) AS definition FROM pg_proc p
       WHERE p.pronamespace = current_schema()::regnamespace ORDER BY p.proname`,
    );
    return new Map(rows.map((r) => [r.name, r.definition.replace(`FUNCTION ${schema}.`, 'FUNCTION ')]));
  }

  const differing = async (): Promise<MoneyFunction[]> => {
    const now = await deployed();
    return MONEY_FUNCTIONS.filter((name) => normalised(now.get(name) ?? '') !== normalised(moneyFunctionSource(name)));
  };

  it('deploys exactly the functions that have files, each as its file defines it', async () => {
    expect([...(await deployed()).keys()].sort()).toEqual([...MONEY_FUNCTIONS].sort());
    expect(await differing()).toEqual([]);
  });

  it('notices a deployed function that differs from its file, and migration 016 puts the file back', async () => {
    // A body patched in place, as migrations 013 and 014 once did from the catalog.
    await db.transaction((tx) =>
      tx.run(`CREATE OR REPLACE FUNCTION rbs_claim_key(
        p_operator_id text, p_key text, p_hash text, p_signature text, p_now bigint, p_status integer,
        p_response text) RETURNS jsonb LANGUAGE plpgsql AS $fn$ BEGIN RETURN NULL; END $fn$`),
    );
    expect(await differing()).toEqual(['rbs_claim_key']);
    const kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: db.pool }) });
    await m016.up(kysely);
    expect(await differing()).toEqual([]);
  });
});
