/**
 * The store half of a place-bet, without HTTP: `IdempotencyService` + `placeCrashBet` (with the
 * compliance rules) on a fresh SQLite file, in batches like the ones group commit forms under load.
 * Prints the event loop's CPU per bet (from /proc, so the log-sync and checkpoint threads are not
 * counted) and the average time of each SQL statement.
 *
 *   npx tsx bench/store-path.ts [--batch 40] [--batches 2500] [--warmup 500] [--pg postgres://…]
 *
 * With --pg the same path runs on PostgreSQL (a schema created for the run and dropped after it,
 * the service's pool of 10): the bets/s it reaches is what one primary sustains for place-bet at
 * today's round trips from one process. Per-statement times are not printed then: a PostgreSQL
 * statement's time is spent waiting on the socket, not in the call.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { placeCrashBet } from '../src/games/crash/crash-bets';
import { systemClock } from '../src/clock/clock';
import { ComplianceService } from '../src/compliance/compliance-service';
import { OperatorModes } from '../src/operators/operator-mode';
import { IdempotencyService } from '../src/idempotency/idempotency';
import { OperatorService } from '../src/operators/operators';
import { SecretBox } from '../src/operators/secret-box';
import { roundRepository } from '../src/games/engine/round-repository';
import type { Database, SqlExecutor } from '../src/store/database';
import { openDatabase } from '../src/store/open';
import pg from 'pg';

const { values: flags } = parseArgs({
  options: {
    batch: { type: 'string', default: '40' },
    batches: { type: 'string', default: '2500' },
    warmup: { type: 'string', default: '500' },
    pg: { type: 'string' },
  },
});
const batch = Number(flags.batch);
const batches = Number(flags.batches);
const warmup = Number(flags.warmup);

const timings = new Map<string, { ns: number; n: number }>();
// The SQLite adapter runs a statement synchronously when it is called and returns a settled
// promise, so the call itself is the statement's time (awaiting would add other work's microtasks).
const timed = <T>(sql: string, run: () => Promise<T>): Promise<T> => {
  const started = process.hrtime.bigint();
  const result = run();
  const key = sql.replace(/\s+/g, ' ').slice(0, 60);
  const t = timings.get(key) ?? { ns: 0, n: 0 };
  t.ns += Number(process.hrtime.bigint() - started);
  t.n++;
  timings.set(key, t);
  return result;
};
const timedExecutor = (tx: SqlExecutor): SqlExecutor => ({
  dialect: tx.dialect,
  all: (sql, params) => timed(sql, () => tx.all(sql, params)),
  get: (sql, params) => timed(sql, () => tx.get(sql, params)),
  run: (sql, params) => timed(sql, () => tx.run(sql, params)),
});
const timedDatabase = (db: Database): Database => ({
  ...timedExecutor(db),
  reads: timedExecutor(db.reads),
  transaction: (fn, options) => db.transaction((tx) => fn(timedExecutor(tx)), options),
  tryAcquireLease: (name) => db.tryAcquireLease(name),
  close: () => db.close(),
});

/** User + system CPU of this process's main thread, in microseconds (Linux). */
function mainThreadCpuUs(): number {
  const fields = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const dataDir = mkdtempSync(join(tmpdir(), 'rbs-store-path-'));
const pgUrl = flags.pg ?? null;
const schema = `store_path_${randomBytes(5).toString('hex')}`;
const admin = async (sql: string): Promise<void> => {
  const c = new pg.Client({ connectionString: pgUrl! });
  await c.connect();
  await c.query(sql).finally(() => c.end());
};
if (pgUrl) await admin(`CREATE SCHEMA ${schema}`);
const db = await openDatabase({ databaseUrl: pgUrl, dataDir }, pgUrl ? { schema } : {});
try {
  const operators = new OperatorService(db, new SecretBox(randomBytes(32)), systemClock, 0);
  const created = await operators.create({ name: 'store-path' });
  const operator = (await operators.byApiKey(created.apiKey))!;
  const now = Date.now();
  await db.transaction((tx) =>
    roundRepository.insert(tx, {
      game: 'crash',
      seedHash: 'h',
      seed: 's',
      chainId: 'bench',
      chainIdx: 0,
      openedAt: now,
      bettingClosesAt: now + 86_400_000,
      settings: {},
    }),
  );
  const measured = timedDatabase(db);
  const idempotency = new IdempotencyService(measured, () => Date.now());
  const modes = new OperatorModes();
  const writes = { compliance: new ComplianceService({ modes }), modes };

  const placeBatch = (): Promise<unknown> =>
    Promise.all(
      Array.from({ length: batch }, () => {
        const body = {
          external_user_id: `p${String(Math.floor(Math.random() * 10_000)).padStart(5, '0')}`,
          amount: 100,
        };
        return idempotency.execute(
          { operatorId: operator.id, key: randomUUID(), route: 'POST /api/public/v1/place-bet', body },
          () => ({ statusCode: 409, body: {} }),
          async (tx) => {
            const bet = await placeCrashBet(
              tx,
              writes,
              operator,
              { externalUserId: body.external_user_id, amount: body.amount, autoCashout: null },
              Date.now(),
            );
            return { statusCode: 200, body: { bet_id: bet.id } };
          },
        );
      }),
    );

  for (let i = 0; i < warmup; i++) await placeBatch();
  timings.clear();
  const cpuBefore = mainThreadCpuUs();
  const started = performance.now();
  for (let i = 0; i < batches; i++) await placeBatch();
  const bets = batch * batches;
  const wallUs = ((performance.now() - started) * 1000) / bets;
  console.log(`${bets} bets in batches of ${batch} (after ${warmup * batch} warm-up bets)`);
  console.log(
    `event loop CPU per bet: ${((mainThreadCpuUs() - cpuBefore) / bets).toFixed(1)} µs; ` +
      `wall time per bet: ${wallUs.toFixed(1)} µs`,
  );
  console.log(`throughput: ${(1e6 / wallUs).toFixed(0)} bets/s (${pgUrl ? 'postgresql, pool of 10' : 'sqlite'})`);
  if (pgUrl) timings.clear();
  for (const [sql, t] of [...timings].sort((a, b) => b[1].ns - a[1].ns)) {
    console.log(`${(t.ns / t.n / 1000).toFixed(1).padStart(7)} µs  ${String(t.n).padStart(8)}×  ${sql}`);
  }
} finally {
  await db.close();
  rmSync(dataDir, { recursive: true, force: true });
  if (pgUrl) await admin(`DROP SCHEMA ${schema} CASCADE`);
}
