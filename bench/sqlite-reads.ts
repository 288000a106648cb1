/**
 * What the reads of a SQLite cash-out cost, statement by statement, on a migrated store holding
 * `--bets` Crash bets (one per player, as in the cash-out case of `npm run bench`):
 * - a whole bet row and a whole round row, as better-sqlite3 builds the row object, and as the
 *   adapter (`SqliteDatabase`) returns it;
 * - the machine-timing precheck (does the player have `streak` bets since a time?) as a COUNT over
 *   a LIMIT subquery, and as the row at offset streak - 1.
 * Each runs inside one open transaction, as the cash-out unit does. Prints µs per call.
 *
 *   npx tsx bench/sqlite-reads.ts [--bets 120000] [--calls 20000]
 */
import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { migrate } from '../src/store/migrate';
import { SqliteDatabase } from '../src/store/sqlite';

const { values: flags } = parseArgs({
  options: { bets: { type: 'string', default: '120000' }, calls: { type: 'string', default: '20000' } },
});
const bets = Number(flags.bets);
const calls = Number(flags.calls);

const dir = mkdtempSync(join(tmpdir(), 'rbs-sqlite-reads-'));
const file = join(dir, 'reads.db');
const store = new SqliteDatabase({ filename: file });
try {
  await migrate(store);
  const now = Date.now();
  await store.transaction(async (tx) => {
    await tx.run(
      `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
       VALUES ('op_bench', 'bench', 'pk_bench', 'x', 'active', '{}', ?, ?)`,
      [now, now],
    );
    await tx.run(
      `INSERT INTO rounds (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at,
         betting_closes_at, running_at, ends_at, settings, scripted, heartbeat_at)
       VALUES ('rnd_bench', 'crash', 1, 'running', ?, ?, 'chain_bench', 0, ?, ?, ?, ?, ?, 0, ?)`,
      ['a'.repeat(64), 'b'.repeat(64), now, now, now, now + 60_000, '{"salt":"s","house_edge_bp":100}', now],
    );
    await tx.run(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
       INSERT INTO bets (id, operator_id, game, round_id, round_number, player, amount, status, placed_at)
       SELECT printf('bet_%07d', i), 'op_bench', 'crash', 'rnd_bench', 1, 'p' || i, 100, 'active', ? - i FROM n`,
      [bets, now],
    );
  });

  const time = (label: string, call: () => unknown): void => {
    for (let i = 0; i < calls / 10; i++) call();
    const started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) call();
    const us = Number(process.hrtime.bigint() - started) / calls / 1000;
    process.stdout.write(`${us.toFixed(2).padStart(7)} µs  ${label}\n`);
  };
  const native = new BetterSqlite3(file);
  const bet = ['bet_0005000'];
  const player = ['op_bench', 'p5000', 0];
  const since = 'FROM bets WHERE operator_id = ? AND player = ? AND placed_at > ?';
  const count = `SELECT COUNT(*) AS n FROM (SELECT 1 ${since} LIMIT ?)`;
  const offset = `SELECT placed_at ${since} ORDER BY placed_at LIMIT 1 OFFSET ?`;
  native.exec('BEGIN');
  const nativeBet = native.prepare('SELECT * FROM bets WHERE id = ?');
  const nativeRound = native.prepare('SELECT * FROM rounds WHERE id = ?');
  const nativeCount = native.prepare(count);
  const nativeOffset = native.prepare(offset);
  time('bet row, better-sqlite3 object', () => nativeBet.get(...bet));
  time('round row, better-sqlite3 object', () => nativeRound.get('rnd_bench'));
  time('precheck, COUNT over LIMIT subquery (streak 5)', () => nativeCount.get(...player, 5));
  time('precheck, row at OFFSET streak - 1 (streak 5)', () => nativeOffset.get(...player, 4));
  native.exec('COMMIT');
  native.close();
  await store.unit((tx) => {
    time('bet row, SqliteDatabase', () => tx.get('SELECT * FROM bets WHERE id = ?', bet));
    time('round row, SqliteDatabase', () => tx.get('SELECT * FROM rounds WHERE id = ?', ['rnd_bench']));
  });
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
