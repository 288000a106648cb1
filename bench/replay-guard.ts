/**
 * What recording accepted signatures costs a state-changing request:
 * - idempotency-keyed calls (place-bet, cash-out): the signature rides on the key row the
 *   command writes anyway; measured as `IdempotencyService.execute` with and without it;
 * - other calls: `claim()` on the seen-signature store, in concurrent batches (like requests in
 *   flight under load) and one at a time (the latency one request pays). SQLite joins the group
 *   commit; PostgreSQL is one autocommit INSERT; Redis is one script call.
 *
 *   npx tsx bench/replay-guard.ts [--n 20000] [--batch 40]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { IdempotencyService } from '../src/idempotency/idempotency';
import type { Database } from '../src/store/database';
import { RedisSeenSignatures, type SeenSignatureStore } from '../src/admission/replay-guard';
import { DatabaseSeenSignatures } from '../src/admission/seen-signature-repository';
import { migrate } from '../src/store/migrate';
import { PostgresDatabase } from '../src/store/postgres';
import { SqliteDatabase } from '../src/store/sqlite';

const { values: flags } = parseArgs({
  options: { n: { type: 'string', default: '20000' }, batch: { type: 'string', default: '40' } },
});
const n = Number(flags.n);
const batch = Number(flags.batch);
const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The record's shape in the service: the signed timestamp, then 128 bits of the signature. */
const recordKey = () => `${String(Date.now()).padStart(15, '0')}.${randomBytes(16).toString('hex')}`;

async function measure(label: string, store: SeenSignatureStore): Promise<void> {
  const expiresAt = Date.now() + 360_000;
  const sig = recordKey;
  for (let i = 0; i < 500; i++) await store.claim(sig(), 'key:w', expiresAt);
  let started = process.hrtime.bigint();
  for (let done = 0; done < n; done += batch) {
    await Promise.all(Array.from({ length: batch }, () => store.claim(sig(), 'key:k', expiresAt)));
  }
  const concurrentUs = Number(process.hrtime.bigint() - started) / 1000 / n;
  const sequential = Math.min(n, 2000);
  started = process.hrtime.bigint();
  for (let i = 0; i < sequential; i++) await store.claim(sig(), 'key:k', expiresAt);
  const latencyUs = Number(process.hrtime.bigint() - started) / 1000 / sequential;
  console.log(
    `${label.padEnd(10)} batches of ${batch}: ${concurrentUs.toFixed(1)} µs per claim ` +
      `(${Math.round(1e6 / concurrentUs)} claims/s); ` +
      `one at a time: ${latencyUs.toFixed(0)} µs`,
  );
}

/** The key row plus one statement standing for the command, in batches; with and without a signature. */
async function measureFolded(label: string, db: Database): Promise<void> {
  await db.run('CREATE TABLE IF NOT EXISTS bench_effect (id TEXT PRIMARY KEY)');
  const idem = new IdempotencyService(db, () => Date.now());
  const present = () => ({ statusCode: 500, body: null });
  const run = async (signed: boolean): Promise<number> => {
    const started = process.hrtime.bigint();
    for (let done = 0; done < n; done += batch) {
      await Promise.all(
        Array.from({ length: batch }, () => {
          const id = randomBytes(12).toString('hex');
          const signature = signed ? recordKey() : undefined;
          const scope = { operatorId: 'op', key: id, route: 'POST /bench', body: { id }, signature };
          return idem.execute(scope, present, async (tx) => {
            await tx.run('INSERT INTO bench_effect (id) VALUES (?)', [id]);
            return { statusCode: 200, body: { id } };
          });
        }),
      );
    }
    return Number(process.hrtime.bigint() - started) / 1000 / n;
  };
  await run(false);
  // Interleaved and reduced to medians: the machine's noise is larger than the difference sought.
  const plains: number[] = [];
  const signeds: number[] = [];
  for (let i = 0; i < 5; i++) {
    plains.push(await run(false));
    signeds.push(await run(true));
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const base = median(plains);
  const signed = median(signeds);
  console.log(
    `${label.padEnd(10)} keyed command, batches of ${batch}: ${base.toFixed(1)} µs without the signature, ` +
      `${signed.toFixed(1)} µs with it ` +
      `(${(((signed - base) / base) * 100).toFixed(1)}%)`,
  );
}

const dir = mkdtempSync(join(tmpdir(), 'replay-bench-'));
const sqlite = new SqliteDatabase({ filename: join(dir, 'bench.db') });
await migrate(sqlite);
await measureFolded('sqlite', sqlite);
await measure('sqlite', new DatabaseSeenSignatures(sqlite));
await sqlite.close();

const schema = `bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: PG_URL });
await admin.connect();
await admin.query(`CREATE SCHEMA ${schema}`);
const postgres = new PostgresDatabase({ connectionString: PG_URL, schema });
await migrate(postgres);
await measureFolded('postgres', postgres);
await measure('postgres', new DatabaseSeenSignatures(postgres));
await postgres.close();
await admin.query(`DROP SCHEMA ${schema} CASCADE`);
await admin.end();

const redis = new Redis(REDIS_URL, { keyPrefix: `bench-${randomBytes(4).toString('hex')}:` });
const inRedis = new RedisSeenSignatures(redis, () => Date.now());
// A first use: no history of an earlier record to lose.
await inRedis.open({ usedBefore: async () => false, noteUse: async () => {} });
await measure('redis', inRedis);
await redis.quit();
