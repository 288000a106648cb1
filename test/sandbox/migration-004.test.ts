import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/database';
import { migrate } from '../../src/store/migrate';
import * as m001 from '../../src/store/migrations/001_initial';
import * as m002 from '../../src/store/migrations/002_webhook_pipeline';
import * as m003 from '../../src/store/migrations/003_chain_commitments';
import { PostgresDatabase } from '../../src/store/postgres';
import { SqliteDatabase } from '../../src/store/sqlite';
import { PG_URL, STORES } from '../support/harness';

/**
 * The sandbox migration on a store that already holds live data: rounds and bets survive (SQLite
 * rebuilds the rounds table), foreign keys still hold, and round numbers become per world.
 */
describe.each(STORES)('migration 004_sandbox over existing data on %s', (store) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  async function storeAtVersion3(): Promise<Database> {
    const provider = {
      getMigrations: async () => ({
        '001_initial': m001,
        '002_webhook_pipeline': m002,
        '003_chain_commitments': m003,
      }),
    };
    if (store === 'sqlite') {
      const db = new SqliteDatabase({ filename: join(mkdtempSync(join(tmpdir(), 'rbs-mig-')), 'service.db') });
      cleanups.push(() => db.close());
      const { error } = await new Migrator({
        db: new Kysely<unknown>({ dialect: new SqliteDialect({ database: db.raw }) }),
        provider,
      }).migrateToLatest();
      if (error) throw error;
      return db;
    }
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const db = new PostgresDatabase({ connectionString: PG_URL, schema });
    cleanups.push(async () => {
      await db.close();
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA ${schema} CASCADE`);
      await c.end();
    });
    const kysely = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: db.pool }) });
    const { error } = await new Migrator({ db: kysely, provider, migrationTableSchema: schema }).migrateToLatest();
    if (error) throw error;
    return db;
  }

  const insertRound = (db: Database, id: string, n: number, operatorId: string | null = null) =>
    db.transaction((tx) =>
      tx.run(
        `INSERT INTO rounds (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at,
           betting_closes_at, settings${operatorId ? ', operator_id' : ''})
           VALUES (?, 'crash', ?, 'closed', 'h', 's', 'c', 0, 1, 2, '{}'${operatorId ? ', ?' : ''})`,
        operatorId ? [id, n, operatorId] : [id, n],
      ),
    );

  it('keeps rounds and bets, adds the sandbox columns, and numbers rounds per world', async () => {
    const db = await storeAtVersion3();
    await db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
         VALUES ('op_1', 'Live', 'pk_1', 'x', 'active', '{}', 1, 1)`,
      );
      await tx.run(
        `INSERT INTO operators (id, name, api_key, secret_enc, wallet_url, status, settings, created_at, updated_at)
         VALUES ('op_2', 'Wallet', 'pk_2', 'x', 'https://wallet.example', 'active', '{}', 1, 1)`,
      );
    });
    await insertRound(db, 'rnd_1', 1);
    await db.transaction((tx) =>
      tx.run(
        `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, amount, status, placed_at)
         VALUES ('b1', 'op_1', 'crash', 'rnd_1', 1, 'p', 100, 'lost', 1)`,
      ),
    );

    expect(await migrate(db as SqliteDatabase | PostgresDatabase)).toEqual([
      '004_sandbox',
      '005_round_heartbeat',
      '006_seen_signatures',
      '007_bet_commands',
      '008_cash_out_timing_precheck',
      '009_cash_out_batches',
      '010_set_based_place_bets',
      '011_bets_round_index',
      '012_wallet_operators',
      '013_quoted_payouts',
      '014_bigint_multipliers',
      '015_compliance_flag_acknowledgements',
      '016_money_functions_from_files',
      '017_wallet_settlements_claim_order',
    ]);
    // 012: an operator with a wallet URL settles to it; one without stays webhook-only.
    expect(await db.all('SELECT id, settles_to_wallet FROM operators ORDER BY id')).toEqual([
      { id: 'op_1', settles_to_wallet: 0 },
      { id: 'op_2', settles_to_wallet: 1 },
    ]);

    expect(await db.get('SELECT id, round_number, operator_id, scripted FROM rounds')).toEqual({
      id: 'rnd_1',
      round_number: 1,
      operator_id: null,
      scripted: 0,
    });
    expect(await db.get('SELECT id, round_id FROM bets')).toEqual({ id: 'b1', round_id: 'rnd_1' });
    expect(await db.all('SELECT mode FROM operators')).toEqual([{ mode: 'live' }, { mode: 'live' }]);
    if (store === 'sqlite') {
      const raw = (db as SqliteDatabase).raw;
      expect(raw.pragma('foreign_key_check')).toEqual([]);
      expect(raw.pragma('foreign_keys', { simple: true })).toBe(1);
      // The rebuilt table keeps every index the earlier migrations gave it.
      const indexes = (
        raw.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'rounds'`).all() as {
          name: string;
        }[]
      ).map((r) => r.name);
      expect(indexes).toEqual(expect.arrayContaining(['rounds_game_status', 'rounds_chain_idx']));
    }
    // A bet still cannot point at a round that does not exist.
    await expect(
      db.transaction((tx) =>
        tx.run(
          `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, amount, status, placed_at)
           VALUES ('b2', 'op_1', 'crash', 'nope', 1, 'p', 1, 'lost', 1)`,
        ),
      ),
    ).rejects.toThrow();
    // Round 1 again in the live world is refused; round 1 of a sandbox is its own.
    await expect(insertRound(db, 'rnd_dup', 1)).rejects.toThrow();
    await insertRound(db, 'rnd_sb1', 1, 'op_test');
    await expect(insertRound(db, 'rnd_sb_dup', 1, 'op_test')).rejects.toThrow();
    await insertRound(db, 'rnd_sb2', 1, 'op_other');
  });
});
