import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually, freshDatabase, PG_URL, STORES } from '../../test/support/harness';
import { endLeaseSession, fenceWaiters } from '../../test/support/lease-sessions';
import { DomainError } from '../errors/codes';
import { StoreUnavailableError } from '../errors/unavailable';
import { IdempotencyService } from '../idempotency/idempotency';
import { type Database, LeaseLostError, type SqlExecutor, type SqlParam } from './database';
import { migrate } from './migrate';
import { leaseKeys, PostgresDatabase as PostgresDatabaseClass, type PostgresDatabase } from './postgres';
import { SqliteDatabase as SqliteDatabaseClass, type SqliteDatabase } from './sqlite';

/** The same suite runs against both adapters: what the domain relies on must hold on each. */
describe.each(STORES)('store contract on %s', (kind) => {
  let db: Database;
  let dispose: () => Promise<void>;
  let dataDir: string;

  beforeEach(async () => {
    const fresh = await freshDatabase(kind);
    db = fresh.db;
    dispose = fresh.dispose;
    dataDir = fresh.dataDir;
  });
  afterEach(async () => dispose());

  const insertOperatorInto = (store: Database, id: string) =>
    store.transaction((tx) =>
      tx.run(
        `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
         VALUES (?, 'n', ?, 'x', 'active', '{}', 1, 1)`,
        [id, `key-${id}`],
      ),
    );
  const insertOperator = (id: string) => insertOperatorInto(db, id);

  it('commits a transaction atomically and rolls back one that throws', async () => {
    await insertOperator('a');
    await expect(
      db.transaction(async (tx) => {
        await tx.run(`UPDATE operators SET name = 'changed' WHERE id = 'a'`);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await db.get<{ name: string }>(`SELECT name FROM operators WHERE id = 'a'`)).toEqual({ name: 'n' });
  });

  it('isolates concurrent transactions: a failing one does not take the others down', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        i === 7
          ? db.transaction(async (tx) => {
              await tx.run(
                `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
                 VALUES ('bad', 'n', 'k-bad', 'x', 'active', '{}', 1, 1)`,
              );
              throw new DomainError('BETTING_CLOSED', 'refused');
            })
          : insertOperator(`op${i}`),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(19);
    expect(results[7]).toMatchObject({ status: 'rejected', reason: { code: 'BETTING_CLOSED' } });
    const count = await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM operators');
    expect(Number(count!.n)).toBe(19);
  });

  it('rejects a unique violation inside one transaction without losing the batch', async () => {
    await insertOperator('dup');
    const [again, other] = await Promise.allSettled([insertOperator('dup'), insertOperator('fine')]);
    expect(again.status).toBe('rejected');
    expect(other.status).toBe('fulfilled');
  });

  it('settles a row exactly once when two writers race with a conditional update', async () => {
    await insertOperator('o');
    await db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO rounds (id, game, round_number, status, seed_hash, seed, chain_id, chain_idx, opened_at,
           betting_closes_at, settings)
         VALUES ('r', 'crash', 1, 'running', 'h', 's', 'c', 0, 1, 2, '{}')`,
      );
      await tx.run(
        `INSERT INTO bets (id, operator_id, game, round_id, round_number, player, amount, status, placed_at)
         VALUES ('b', 'o', 'crash', 'r', 1, 'p', 100, 'active', 1)`,
      );
    });
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        db.transaction(
          async (tx) =>
            (
              await tx.run(`UPDATE bets SET status = 'cashed_out', payout = ? WHERE id = 'b' AND status = 'active'`, [
                i,
              ])
            ).changes,
        ),
      ),
    );
    expect(outcomes.reduce((a, b) => a + b, 0)).toBe(1);
  });

  it('runs concurrent duplicates of one idempotency key exactly once', async () => {
    await insertOperator('o');
    const svc = new IdempotencyService(db, () => 1);
    let effects = 0;
    const scope = { operatorId: 'o', key: 'k1', route: 'POST /x', body: { a: 1, b: [1, 2] } };
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        svc.execute(
          scope,
          () => ({ statusCode: 409, body: {} }),
          async (tx) => {
            effects++;
            await tx.run(`UPDATE operators SET name = 'touched' WHERE id = 'o'`);
            return { statusCode: 200, body: { ok: true } };
          },
        ),
      ),
    );
    expect(effects).toBe(1);
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(results.every((r) => r.statusCode === 200)).toBe(true);
    // Same content, other key order: a replay. Other content: a conflict.
    const replay = await svc.execute(
      { ...scope, body: { b: [1, 2], a: 1 } },
      () => ({ statusCode: 409, body: {} }),
      async () => {
        throw new Error('must not run');
      },
    );
    expect(replay).toEqual({ statusCode: 200, body: { ok: true }, replayed: true });
    await expect(
      svc.execute(
        { ...scope, body: { a: 2 } },
        () => ({ statusCode: 409, body: {} }),
        async () => ({ statusCode: 200, body: {} }),
      ),
    ).rejects.toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', message: 'idempotency key reused with different body' });
  });

  it('keyed write: a key answered between lookup and claim is replayed, and the write rolled back', async () => {
    await insertOperator('o');
    // Two services, two in-flight maps: what two processes behind a load balancer would be.
    const first = new IdempotencyService(db, () => 1);
    const second = new IdempotencyService(db, () => 1);
    const scope = { operatorId: 'o', key: 'kw', route: 'POST /w', body: { n: 1 } };
    const present = () => ({ statusCode: 409, body: {} });
    const rename = (name: string) => (tx: SqlExecutor) =>
      tx.run('UPDATE operators SET name = ? WHERE id = ?', [name, 'o']).then(() => ({ name }));
    const answer = (r: { name: string }) => ({ statusCode: 201, body: r });
    const result = await second.keyedWrite(
      scope,
      async (inTx) => {
        // The other instance completes the same key after this one's lookup found nothing.
        const other = await first.keyedWrite(scope, (otherTx) => otherTx(rename('first')), answer, present);
        expect(other).toEqual({ statusCode: 201, body: { name: 'first' }, replayed: false });
        return inTx(rename('second'));
      },
      answer,
      present,
    );
    expect(result).toEqual({ statusCode: 201, body: { name: 'first' }, replayed: true });
    const row = await db.get<{ name: string }>('SELECT name FROM operators WHERE id = ?', ['o']);
    expect(row?.name).toBe('first');
  });

  it('keeps one effect when two instances race on one key: the other replays the response of the first', async () => {
    await insertOperator('o');
    // Two services, two in-flight maps: what two processes behind a load balancer would be.
    const instances = [new IdempotencyService(db, () => 1), new IdempotencyService(db, () => 1)];
    const scope = { operatorId: 'o', key: 'race', route: 'POST /x', body: { n: 1 } };
    // PostgreSQL: hold the first effect until the other instance is certainly inside its own
    // transaction (both effects started, or 300 ms), so the two really overlap. SQLite runs one
    // writer at a time: there is no overlap to force, so no wait.
    let inside = 0;
    let bothInside!: () => void;
    const overlap = new Promise<void>((resolve) => {
      bothInside = resolve;
      setTimeout(resolve, 300);
    });
    const results = await Promise.all(
      instances.flatMap((svc, i) =>
        [0, 1, 2].map((j) =>
          svc.execute(
            scope,
            () => ({ statusCode: 409, body: {} }),
            async (tx) => {
              if (kind === 'postgres') {
                if (++inside === 2) bothInside();
                await overlap;
              }
              const id = `effect-${i}-${j}`;
              await tx.run(
                `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
                 VALUES (?, 'n', ?, 'x', 'active', '{}', 1, 1)`,
                [id, `key-${id}`],
              );
              return { statusCode: 200, body: { by: id } };
            },
          ),
        ),
      ),
    );
    const rows = await db.all<{ id: string }>(`SELECT id FROM operators WHERE id LIKE 'effect-%'`);
    expect(rows).toHaveLength(1);
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    // Everybody was answered with the one effect that stayed.
    expect(new Set(results.map((r) => (r.body as { by: string }).by))).toEqual(new Set([rows[0]!.id]));
  });

  it('keeps idempotency keys per operator', async () => {
    await insertOperator('o1');
    await insertOperator('o2');
    const svc = new IdempotencyService(db, () => 1);
    const run = (operatorId: string) =>
      svc.execute(
        { operatorId, key: 'same', route: 'POST /x', body: { operatorId } },
        () => ({ statusCode: 409, body: {} }),
        async () => ({
          statusCode: 200,
          body: { operatorId },
        }),
      );
    expect(await run('o1')).toMatchObject({ replayed: false, body: { operatorId: 'o1' } });
    expect(await run('o2')).toMatchObject({ replayed: false, body: { operatorId: 'o2' } });
  });

  it('indexes no column that settling a bet changes, so a settlement moves no index entry', async () => {
    // A cash-out or a round end writes these; an index on one of them (migration 011 removed
    // (round_id, status)) writes two more random index pages per settlement on SQLite and rules out
    // PostgreSQL's heap-only update.
    const settlementColumns = ['status', 'payout', 'cashout_multiplier', 'cashout_kind', 'settled_at'];
    const indexed =
      kind === 'sqlite'
        ? await db.all<{ index_name: string; column_name: string }>(
            `SELECT l.name AS index_name, i.name AS column_name
             FROM pragma_index_list('bets') l, pragma_index_info(l.name) i`,
          )
        : await db.all<{ index_name: string; column_name: string }>(
            `SELECT c.relname AS index_name, a.attname AS column_name
             FROM pg_index x
             JOIN pg_class t ON t.oid = x.indrelid
             JOIN pg_class c ON c.oid = x.indexrelid
             JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(x.indkey)
             WHERE t.relname = 'bets' AND t.relnamespace = current_schema()::regnamespace`,
          );
    expect(indexed.map((r) => r.column_name)).toEqual(expect.arrayContaining(['id', 'round_id', 'player']));
    expect(indexed.filter((r) => settlementColumns.includes(r.column_name))).toEqual([]);
  });

  it('applies migrations once: a second run changes nothing', async () => {
    expect(await migrate(db as SqliteDatabase | PostgresDatabase)).toEqual([]);
  });

  if (kind === 'postgres') {
    it('grants a lease to one holder at a time and hands it over when released', async () => {
      const first = await db.tryAcquireLease('engine:test');
      expect(first).not.toBeNull();
      expect(await db.tryAcquireLease('engine:test')).toBeNull();
      expect(await first!.isHeld()).toBe(true);
      await first!.release();
      const second = await db.tryAcquireLease('engine:test');
      expect(second).not.toBeNull();
      await second!.release();
    });

    it('frees the lease of a holder that goes silent, and its holder can no longer write as holder', async () => {
      const pgdb = db as PostgresDatabase;
      const { connectionString, schema } = pgdb.options;
      const standby = new PostgresDatabaseClass({ connectionString, schema });
      try {
        const frozen = await db.tryAcquireLease('engine:silent', { silentForMs: 300 });
        expect(frozen).not.toBeNull();
        expect((await frozen!.runAsHolder('SELECT 1')).changes).toBe(1);
        expect(await standby.tryAcquireLease('engine:silent')).toBeNull();
        // The whole process stops (no timer, no socket read) for longer than the bound; the server
        // does not, and ends the silent session with its lock.
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_200);
        const next = await standby.tryAcquireLease('engine:silent');
        expect(next).not.toBeNull();
        expect(await frozen!.isHeld()).toBe(false);
        await expect(frozen!.runAsHolder('SELECT 1')).rejects.toThrow();
        await next!.release();
        await frozen!.release();
      } finally {
        await standby.close();
      }
    });

    it('fences a lost holder: a takeover waits for its write in flight and every later write is refused', async () => {
      const { connectionString, schema } = (db as PostgresDatabase).options;
      const standby = new PostgresDatabaseClass({ connectionString, schema });
      const name = 'engine:fenced';
      try {
        const old = (await db.tryAcquireLease(name))!;
        // A write that passed the fence while its process held the lease, and has not committed yet.
        let commit!: () => void;
        const committing = new Promise<void>((resolve) => (commit = resolve));
        let passed!: () => void;
        const fenced = new Promise<void>((resolve) => (passed = resolve));
        const inFlight = db.transaction(async (tx) => {
          await old.fence(tx);
          passed();
          await committing;
          await tx.run(
            `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
             VALUES ('in-flight', 'n', 'k-in-flight', 'x', 'active', '{}', 1, 1)`,
          );
        });
        await fenced;
        await endLeaseSession(schema!, name);
        let tookOver = false;
        const takeover = standby.tryAcquireLease(name).then((lease) => ((tookOver = true), lease));
        // The new holder has the lease lock and waits at the fence for the write in flight.
        await eventually(async () => (await fenceWaiters(schema!, name)) === 1, 5_000, 10);
        expect(tookOver).toBe(false);
        commit();
        await inFlight;
        const next = (await takeover)!;
        expect(next).not.toBeNull();
        // What the new holder reads once it holds the lease includes that write…
        expect(await standby.get(`SELECT id FROM operators WHERE id = 'in-flight'`)).toEqual({ id: 'in-flight' });
        // …and the old holder writes nothing more.
        await expect(
          db.transaction(async (tx) => {
            await old.fence(tx);
            await tx.run(`UPDATE operators SET name = 'late' WHERE id = 'in-flight'`);
          }),
        ).rejects.toBeInstanceOf(LeaseLostError);
        await standby.transaction((tx) => next.fence(tx));
        expect(await db.get(`SELECT name FROM operators WHERE id = 'in-flight'`)).toEqual({ name: 'n' });
        await next.release();
        await old.release();
      } finally {
        await standby.close();
      }
    });

    it('refuses a fenced write once the lease lock is gone, even while its session still answers', async () => {
      const name = 'engine:unlocked';
      const lease = (await db.tryAcquireLease(name))!;
      await db.transaction((tx) => lease.fence(tx));
      // The session stays open and answers (isHeld cannot tell), but no longer holds the lease lock:
      // only the look in pg_locks can refuse the write.
      const key = leaseKeys((db as PostgresDatabase).options.schema!, name).lease.toString();
      await lease.runAsHolder('SELECT pg_advisory_unlock(?::bigint)', [key]);
      expect(await lease.isHeld()).toBe(true);
      await expect(
        db.transaction(async (tx) => {
          await lease.fence(tx);
          await tx.run(
            `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
             VALUES ('never', 'n', 'k-never', 'x', 'active', '{}', 1, 1)`,
          );
        }),
      ).rejects.toBeInstanceOf(LeaseLostError);
      expect(await db.get(`SELECT id FROM operators WHERE id = 'never'`)).toBeUndefined();
      await lease.release();
    });

    it('fails a transaction whose connection the server ends mid-way, and the process lives on', async () => {
      // A restart, a failover, a DBA's pg_terminate_backend or the idle-in-transaction timeout end a
      // connection while the transaction's own code runs between two statements. That used to surface as
      // an unhandled 'error' event on the checked-out client, which ends the whole process.
      await insertOperator('a');
      const admin = new PostgresDatabaseClass({ connectionString: PG_URL });
      const unhandled: unknown[] = [];
      const onUncaught = (error: unknown): void => void unhandled.push(error);
      process.on('uncaughtException', onUncaught);
      try {
        const failed = db.transaction(async (tx) => {
          await tx.run(`UPDATE operators SET name = 'half-done' WHERE id = 'a'`);
          const me = await tx.get<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          await admin.get('SELECT pg_terminate_backend(?)', [me!.pid]);
          // The server's notice arrives while no statement of this transaction is in flight.
          await new Promise((resolve) => setTimeout(resolve, 300));
          await tx.run(`UPDATE operators SET name = 'never' WHERE id = 'a'`);
        });
        await expect(failed).rejects.toThrow();
        expect(unhandled).toEqual([]);
        // Nothing of it was committed, and the pool hands out a live connection for the next transaction.
        const row = await db.transaction((tx) => tx.get<{ name: string }>(`SELECT name FROM operators WHERE id = 'a'`));
        expect(row?.name).toBe('n');
      } finally {
        process.off('uncaughtException', onUncaught);
        await admin.close();
      }
    });

    it('gives up on a statement past its deadline, but never on a migration', async () => {
      const { connectionString, schema } = (db as PostgresDatabase).options;
      const bounded = new PostgresDatabaseClass({ connectionString, schema, poolSize: 1, timeoutMs: 200 });
      try {
        await expect(bounded.get('SELECT pg_sleep(0.6)')).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(bounded.transaction((tx) => tx.get('SELECT pg_sleep(0.6)'))).rejects.toBeInstanceOf(
          StoreUnavailableError,
        );
        // The connection that waited was dropped: the next statement gets a fresh one and its answer.
        expect(await bounded.get<{ x: number }>('SELECT 1 AS x')).toEqual({ x: 1 });
        // A transaction of short statements may outlast the deadline (voiding a large round settles its
        // bets one by one): only a statement left unanswered is given up on.
        const long = bounded.transaction(async (tx) => {
          for (let i = 0; i < 5; i++) await tx.get('SELECT pg_sleep(0.1)');
          return 'done';
        });
        await expect(long).resolves.toBe('done');
        const migrations = bounded.migrationPool();
        try {
          // A migration may rewrite a large table for minutes: its pool has no deadline.
          await expect(migrations.query('SELECT pg_sleep(0.6)')).resolves.toBeDefined();
        } finally {
          await migrations.end();
        }
      } finally {
        await bounded.close();
      }
    });

    it('scopes a lease to the schema named in the connection URL', async () => {
      const pgdb = db as PostgresDatabase;
      const other = await freshDatabase('postgres');
      const viaUrl = (schema: string) => {
        const options = encodeURIComponent(`-c search_path=${schema}`);
        return new PostgresDatabaseClass({ connectionString: `${PG_URL}?options=${options}` });
      };
      const mine = viaUrl(pgdb.options.schema!);
      const theirs = viaUrl(other.schema!);
      try {
        const a = await mine.tryAcquireLease('engine:crash');
        const b = await theirs.tryAcquireLease('engine:crash');
        expect(a).not.toBeNull();
        expect(b).not.toBeNull();
        // The same schema named either way is the same lease.
        expect(await db.tryAcquireLease('engine:crash')).toBeNull();
        await a!.release();
        await b!.release();
      } finally {
        await mine.close();
        await theirs.close();
        await other.dispose();
      }
    });
  }

  if (kind === 'sqlite') {
    it('answers a transaction only once it is committed and its log is synced to disk', async () => {
      // A second database on its own file, whose fdatasync the test holds open.
      const file = join(dataDir, 'held.db');
      const held: ((err: NodeJS.ErrnoException | null) => void)[] = [];
      const sqlite = new SqliteDatabaseClass({
        filename: file,
        syncFile: () => new Promise<void>((resolve, reject) => held.push((err) => (err ? reject(err) : resolve()))),
        checkpointThreadAfterCommits: 1,
      });
      await migrate(sqlite);
      held.splice(0).forEach((done) => done(null));
      const reader = new BetterSqlite3(file, { readonly: true });
      try {
        let answered = false;
        const write = sqlite
          .transaction((tx) =>
            tx.run(
              `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
               VALUES ('durable', 'n', 'k', 'x', 'active', '{}', 1, 1)`,
            ),
          )
          .then(() => (answered = true));
        // The first sync also opens the log and syncs its directory (real I/O): allow for a busy disk.
        for (let i = 0; i < 1000 && held.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
        expect(held).toHaveLength(1);
        // COMMIT has happened (another connection sees the row), but the caller has not been answered.
        expect(reader.prepare(`SELECT id FROM operators WHERE id = 'durable'`).get()).toEqual({ id: 'durable' });
        expect(answered).toBe(false);
        held.shift()!(null);
        await write;
        expect(answered).toBe(true);
        // SQLite itself does not fsync on COMMIT (that is WalSync's job) nor checkpoint on this thread.
        expect(sqlite.raw.pragma('synchronous', { simple: true })).toBe(1);
        expect(sqlite.raw.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
      } finally {
        reader.close();
        const closing = sqlite.close();
        held.splice(0).forEach((done) => done(null));
        await closing;
      }
    });

    it('waits for a write lock another connection holds instead of failing the batch', async () => {
      // The admin CLI writing, or the checkpoint thread starting the log over, holds SQLite's write
      // lock for a while; a batch that finds it taken must wait, not answer its callers with a 500.
      const file = join(dataDir, 'contended.db');
      const sqlite = new SqliteDatabaseClass({ filename: file, busyTimeoutMs: 20 });
      const other = new BetterSqlite3(file);
      try {
        await migrate(sqlite);
        other.exec('BEGIN IMMEDIATE');
        const outcomes: string[] = [];
        const writes = ['held-1', 'held-2'].map((id) =>
          insertOperatorInto(sqlite, id).then(
            () => outcomes.push(`${id} written`),
            (error: { code?: string }) => outcomes.push(`${id} failed: ${error.code}`),
          ),
        );
        // Several times the busy timeout: each attempt has been refused by now.
        await new Promise((r) => setTimeout(r, 200));
        expect(outcomes).toEqual([]);
        other.exec('COMMIT');
        await Promise.all(writes);
        expect(outcomes.sort()).toEqual(['held-1 written', 'held-2 written']);
        expect(other.prepare(`SELECT id FROM operators WHERE id LIKE 'held-%' ORDER BY id`).all()).toEqual([
          { id: 'held-1' },
          { id: 'held-2' },
        ]);
      } finally {
        if (other.inTransaction) other.exec('ROLLBACK');
        other.close();
        await sqlite.close();
      }
    });

    it("returns better-sqlite3's own rows: same keys, values and order, also after the schema changes", async () => {
      const sqlite = db as SqliteDatabase;
      // What better-sqlite3 returns for the same statement on its own connection.
      const native = (sql: string, params: unknown[] = []): unknown[] => sqlite.raw.prepare(sql).all(...params);
      await sqlite.transaction(async (tx) => {
        await tx.run('CREATE TABLE shapes (id TEXT PRIMARY KEY, n INTEGER, big INTEGER, r REAL, b BLOB, t TEXT)');
        await tx.run(`INSERT INTO shapes VALUES ('a', 1, ?, 1.5, x'00ff', NULL), ('b', -2, 0, 0.25, NULL, 'x')`, [
          2 ** 52,
        ]);
      });
      const statements: [string, SqlParam[]][] = [
        ['SELECT * FROM shapes ORDER BY id', []],
        // A name given twice keeps its last value.
        ['SELECT id, n AS id, t, COUNT(*) OVER () AS "a b" FROM shapes WHERE id = ?', ['a']],
      ];
      for (const [sql, params] of statements) {
        const rows = await sqlite.all<Record<string, unknown>>(sql, params);
        expect(rows).toEqual(native(sql, params));
        expect(rows.map((r) => Object.keys(r))).toEqual(native(sql, params).map((r) => Object.keys(r as object)));
        expect(Object.getPrototypeOf(rows[0])).toBe(Object.prototype);
        expect(await sqlite.get(sql, params)).toEqual(rows[0]);
      }
      // A column named "__proto__" is an own key (better-sqlite3's own row would take it as the prototype).
      const proto = await sqlite.get<Record<string, unknown>>(`SELECT 'x' AS "__proto__", 1 AS n`);
      expect(Object.getOwnPropertyDescriptor(proto, '__proto__')?.value).toBe('x');
      expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
      expect(await sqlite.get('SELECT * FROM shapes WHERE id = ?', ['none'])).toBeUndefined();
      expect(await sqlite.all('SELECT * FROM shapes WHERE id = ?', ['none'])).toEqual([]);

      // SQLite prepares a cached `SELECT *` again after the table changes: the rows follow it.
      await sqlite.transaction((tx) => tx.run(`ALTER TABLE shapes ADD COLUMN added TEXT NOT NULL DEFAULT 'new'`));
      const after = await sqlite.get<Record<string, unknown>>('SELECT * FROM shapes ORDER BY id');
      expect(after).toEqual({ id: 'a', n: 1, big: 2 ** 52, r: 1.5, b: Buffer.from([0, 255]), t: null, added: 'new' });

      // DDL on the raw connection (as migrations run) that keeps the width: schemaChanged() forgets the
      // cached statements, so the rows carry the new name.
      sqlite.raw.exec('ALTER TABLE shapes RENAME COLUMN added TO renamed');
      sqlite.schemaChanged();
      expect(await sqlite.get('SELECT * FROM shapes ORDER BY id')).toMatchObject({ renamed: 'new' });
    });

    it('takes no more writes once a log sync has failed', async () => {
      const file = join(dataDir, 'failing.db');
      let failNext = false;
      const sqlite = new SqliteDatabaseClass({
        filename: file,
        syncFile: async () => {
          if (failNext) throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
        },
      });
      try {
        await migrate(sqlite);
        const insert = (id: string) =>
          sqlite.transaction((tx) =>
            tx.run(
              `INSERT INTO operators (id, name, api_key, secret_enc, status, settings, created_at, updated_at)
               VALUES (?, 'n', ?, 'x', 'active', '{}', 1, 1)`,
              [id, `key-${id}`],
            ),
          );
        await insert('before');
        failNext = true;
        await expect(insert('unsynced')).rejects.toThrow(/could not be synced to disk \(EIO: i\/o error, fdatasync\)/);
        failNext = false;
        await expect(insert('after')).rejects.toThrow(/refuses writes until restarted/);
        // Refused before it ran: the row is not even in the log.
        expect(
          sqlite.raw.prepare(`SELECT id FROM operators WHERE id IN ('before', 'after') ORDER BY id`).all(),
        ).toEqual([{ id: 'before' }]);
      } finally {
        await sqlite.close();
      }
    });

    it('copies the log into the database file on the checkpoint thread, after a few commits', async () => {
      const sqlite = new SqliteDatabaseClass({
        filename: join(dataDir, 'ck.db'),
        checkpointThreadAfterCommits: 20,
        checkpointIntervalMs: 20,
      });
      await migrate(sqlite);
      db = sqlite; // insertOperator writes to `db`; the harness's own database is disposed as usual
      const before = sqlite.lastCheckpoint;
      for (let i = 0; i < 50; i++) await insertOperator(`ck${i}`);
      expect(before).toBeNull();
      expect(sqlite.raw.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
      for (let i = 0; i < 1000 && !(sqlite.lastCheckpoint && sqlite.lastCheckpoint.checkpointed > 0); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(sqlite.lastCheckpoint?.checkpointed).toBeGreaterThan(0);
      await sqlite.close();
    });
  }
});
