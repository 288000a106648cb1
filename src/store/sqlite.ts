import BetterSqlite3 from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Database, Lease, RunResult, SqlExecutor, SqlParam, SyncExecutor } from './database';
import { WalSync } from './wal-sync';

interface PendingUnit {
  /** An async unit (a transaction), or a synchronous one (`unit`): exactly one is set. */
  fn: ((tx: SqlExecutor) => Promise<unknown>) | null;
  sync: ((tx: SyncExecutor) => unknown) | null;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface SqliteOptions {
  /** File path, or ':memory:' for tests. */
  filename: string;
  /** Upper bound on transactions folded into one COMMIT. */
  maxBatch?: number;
  /** How often the checkpoint thread copies the write-ahead log into the database file. */
  checkpointIntervalMs?: number;
  /**
   * Commits before the checkpoint thread starts. Until then SQLite checkpoints on this connection as
   * usual, so a short-lived process (the admin CLI) never pays for starting a thread.
   */
  checkpointThreadAfterCommits?: number;
  /** Tests only: replaces the fdatasync of the write-ahead log. */
  syncFile?: ConstructorParameters<typeof WalSync>[1];
  /** How long one attempt to take the write lock waits in SQLite's busy handler (default 5000 ms). */
  busyTimeoutMs?: number;
}

/** What the checkpoint thread last reported: frames in the log, and how many are in the database. */
export interface CheckpointProgress {
  log: number;
  checkpointed: number;
}

/**
 * A prepared statement, and for one that returns rows, how a row read as an array becomes the object
 * callers get. better-sqlite3 built for Node 20 sets a row object's columns one V8 API call at a time;
 * an object literal compiled once per statement builds the same object for less: a bet row 3.0 µs
 * against 5.1, a round row 3.4 against 11.5 (measured in isolation on Node 20).
 */
interface Prepared {
  stmt: BetterSqlite3.Statement;
  /** Null for a statement that returns no rows. */
  toRow: ((values: unknown[]) => unknown) | null;
  /** How many columns toRow was built for. */
  width: number;
}

function prepared(db: BetterSqlite3.Database, sql: string): Prepared {
  const stmt = db.prepare(sql);
  const p: Prepared = { stmt, toRow: null, width: 0 };
  if (stmt.reader) {
    stmt.raw(true);
    buildRow(p);
  }
  return p;
}

/** The statement cached for `sql` on one connection, prepared on first use. */
function cached(cache: Map<string, Prepared>, db: BetterSqlite3.Database, sql: string): Prepared {
  let p = cache.get(sql);
  if (!p) {
    p = prepared(db, sql);
    cache.set(sql, p);
  }
  return p;
}

function buildRow(p: Prepared): void {
  const names = p.stmt.columns().map((c) => c.name);
  // The keys are the statement's own column names, quoted by JSON.stringify; a name given twice keeps
  // its last value, as in better-sqlite3's row object. "__proto__" is written as a computed key, which
  // makes an own property where the plain key would set the prototype.
  const key = (name: string): string => (name === '__proto__' ? `[${JSON.stringify(name)}]` : JSON.stringify(name));
  p.toRow = new Function('v', `return { ${names.map((name, i) => `${key(name)}: v[${i}]`).join(', ')} };`) as (
    values: unknown[],
  ) => unknown;
  p.width = names.length;
}

function toRow(p: Prepared, values: unknown[]): unknown {
  // SQLite prepares a statement again after a schema change, so a `SELECT *` may have gained columns
  // (DDL through this adapter; after migrations, schemaChanged() drops every cached statement).
  if (values.length !== p.width) buildRow(p);
  return p.toRow!(values);
}

function getRow(p: Prepared, params: readonly SqlParam[]): unknown {
  const values = p.stmt.get(...params) as unknown[] | undefined;
  return values === undefined || p.toRow === null ? values : toRow(p, values);
}

function allRows(p: Prepared, params: readonly SqlParam[]): unknown[] {
  const rows = p.stmt.all(...params) as unknown[][];
  if (p.toRow === null) return rows;
  for (let i = 0; i < rows.length; i++) rows[i] = toRow(p, rows[i]!) as unknown[];
  return rows;
}

/** Log length (in 4 KiB frames, so about 32 MiB) past which the checkpoint thread starts it over. */
const RESTART_LOG_ABOVE_FRAMES = 8192;

/**
 * A batch whose BEGIN finds the write lock taken is queued again and retried after this long, until
 * it has waited BUSY_GIVE_UP_MS in all (see retryBusyBatch).
 */
const BUSY_RETRY_MS = 5;
const BUSY_GIVE_UP_MS = 10_000;

/** Upper bound on the extra event-loop turns a flush waits for more units (see scheduleFlush). */
const MAX_GATHER_TURNS = 4;

/**
 * The store holds sealed secrets, players' references and every bet: only the service's own user
 * may read it. SQLite creates its -wal and -shm files with the database file's permissions, so the
 * file is created 0600 before SQLite opens it; files an older version left readable are narrowed.
 */
function ownerOnly(filename: string): void {
  mkdirSync(dirname(filename), { recursive: true, mode: 0o700 });
  if (!existsSync(filename)) closeSync(openSync(filename, 'a', 0o600));
  for (const file of [filename, `${filename}-wal`, `${filename}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600);
  }
}

/**
 * better-sqlite3 is synchronous, so a "transaction" here is a queued unit. Units that arrive while
 * the event loop is busy are folded into one BEGIN IMMEDIATE … COMMIT, and one fsync of the
 * write-ahead log acknowledges the whole batch. Each unit runs inside its own SAVEPOINT, so one
 * failing unit rolls back alone and the others still commit.
 *
 * Only the SQL runs on the event loop. The fsync runs on libuv's thread pool (WalSync) while the
 * next batch executes, and checkpoints run on a thread of their own with their own connection
 * (checkpoint-worker.mjs); callers are still answered only once their COMMIT is on disk.
 */
export class SqliteDatabase implements Database {
  readonly dialect = 'sqlite' as const;
  readonly raw: BetterSqlite3.Database;
  private readonly statements = new Map<string, Prepared>();
  private queue: PendingUnit[] = [];
  private flushScheduled = false;
  private flushing: Promise<void> | null = null;
  private closed = false;
  private readonly maxBatch: number;
  private readonly executor: SqlExecutor;
  private readonly syncExecutor: SyncExecutor;
  // Prepared once: exec() would re-parse these four statements for every unit of every batch.
  private readonly control: Record<
    'begin' | 'savepoint' | 'release' | 'rollbackTo' | 'commit',
    BetterSqlite3.Statement
  >;
  // Null for ':memory:' databases: nothing to sync, nothing to checkpoint.
  private readonly walSync: WalSync | null;
  private checkpointer: Worker | null = null;
  // The read-only connection behind `reads`, opened on first use (null: reads share `raw`).
  private reader: BetterSqlite3.Database | null = null;
  private readonly readerStatements = new Map<string, Prepared>();
  readonly reads: SqlExecutor;
  private checkpointPlan: { filename: string; intervalMs: number; afterCommits: number } | null;
  private commits = 0;
  /** When the batch at the head of the queue first found the write lock taken; null when it did not. */
  private busySince: number | null = null;
  lastCheckpoint: CheckpointProgress | null = null;

  constructor(options: SqliteOptions) {
    const onDisk = options.filename !== ':memory:';
    if (onDisk) ownerOnly(options.filename);
    this.raw = new BetterSqlite3(options.filename);
    this.raw.pragma('journal_mode = WAL');
    // NORMAL: COMMIT writes the log but does not fsync it; WalSync does, off the event loop, before
    // any caller is answered. Durability is FULL's; only who waits for the disk changes.
    this.raw.pragma('synchronous = NORMAL');
    this.raw.pragma('foreign_keys = ON');
    // The admin CLI may write while the service runs; wait for the other writer instead of failing.
    this.raw.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    this.maxBatch = options.maxBatch ?? 512;
    this.control = {
      begin: this.raw.prepare('BEGIN IMMEDIATE'),
      savepoint: this.raw.prepare('SAVEPOINT unit'),
      release: this.raw.prepare('RELEASE unit'),
      rollbackTo: this.raw.prepare('ROLLBACK TO unit'),
      commit: this.raw.prepare('COMMIT'),
    };
    this.walSync = onDisk ? new WalSync(options.filename, options.syncFile) : null;
    this.checkpointPlan = onDisk
      ? {
          filename: options.filename,
          intervalMs: options.checkpointIntervalMs ?? 200,
          afterCommits: options.checkpointThreadAfterCommits ?? 100,
        }
      : null;
    const self = this;
    this.executor = {
      dialect: 'sqlite',
      all: async (sql, params) => self.allSync(sql, params),
      get: async (sql, params) => self.getSync(sql, params),
      run: async (sql, params) => self.runSync(sql, params),
    };
    this.syncExecutor = {
      dialect: 'sqlite',
      all: (sql, params) => self.allSync(sql, params),
      get: (sql, params) => self.getSync(sql, params),
      run: (sql, params) => self.runSync(sql, params),
    };
    // A second connection reads the last committed snapshot (WAL lets it run beside the writer)
    // and never sees the rows of a batch that is still between BEGIN and COMMIT on `raw`. Like
    // every read here it answers only once what it saw is on disk.
    this.reads = onDisk
      ? {
          dialect: 'sqlite',
          all: async (sql, params) => {
            const rows = allRows(self.readStatement(sql), params ?? []) as never[];
            await self.walSync?.whenDurable();
            return rows;
          },
          get: async (sql, params) => {
            const row = getRow(self.readStatement(sql), params ?? []) as never;
            await self.walSync?.whenDurable();
            return row;
          },
          run: async () => {
            throw new Error('the read connection does not write');
          },
        }
      : this;
  }

  /**
   * Forgets every prepared statement, after DDL that did not pass through this adapter (migrations run
   * on `raw`): a cached `SELECT *` would otherwise build its rows with the old column names.
   */
  schemaChanged(): void {
    this.statements.clear();
    this.readerStatements.clear();
  }

  private readStatement(sql: string): Prepared {
    if (this.closed) throw new Error('database is closed');
    if (!this.reader) {
      this.reader = new BetterSqlite3(this.raw.name, { readonly: true, fileMustExist: true });
      this.reader.pragma('busy_timeout = 5000');
    }
    return cached(this.readerStatements, this.reader, sql);
  }

  // Reads outside a transaction may see a batch that is committed but not yet on disk; they answer
  // only once it is, so nobody learns of a write that a power cut could still take back.
  async all<T>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    const rows = this.allSync<T>(sql, params);
    await this.walSync?.whenDurable();
    return rows;
  }
  async get<T>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    const row = this.getSync<T>(sql, params);
    await this.walSync?.whenDurable();
    return row;
  }
  async run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    if (this.walSync?.failure) throw this.walSync.failure;
    const result = this.runSync(sql, params);
    await this.committed();
    return result;
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('database is closed'));
    // After a failed log sync nothing more may commit: it could not be acknowledged anyway.
    if (this.walSync?.failure) return Promise.reject(this.walSync.failure);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, sync: null, resolve: resolve as (v: unknown) => void, reject });
      if (!this.flushScheduled) this.scheduleFlush();
    });
  }

  unit<T>(fn: (tx: SyncExecutor) => T): Promise<T> {
    if (this.closed) return Promise.reject(new Error('database is closed'));
    if (this.walSync?.failure) return Promise.reject(this.walSync.failure);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn: null, sync: fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.flushScheduled) this.scheduleFlush();
    });
  }

  async tryAcquireLease(): Promise<Lease | null> {
    // One process owns a SQLite file's engines; the lease is trivially held.
    return {
      isHeld: async () => !this.closed,
      // Nobody else can take it over, so no write of this process needs fencing off.
      fence: async () => {},
      runAsHolder: (sql, params) => this.transaction((tx) => tx.run(sql, params)),
      release: async () => {},
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.queue.length > 0 || this.flushing) {
      if (this.flushing) await this.flushing;
      else await this.flush();
    }
    await this.walSync?.close();
    await this.stopCheckpointer();
    if (this.reader?.open) this.reader.close();
    if (this.raw.open) this.raw.close();
  }

  private committed(): Promise<void> {
    const plan = this.checkpointPlan;
    if (plan && ++this.commits >= plan.afterCommits && !this.closed) {
      this.checkpointPlan = null;
      this.startCheckpointer(plan.filename, plan.intervalMs);
    }
    return this.walSync ? this.walSync.afterCommit() : Promise.resolve();
  }

  private startCheckpointer(filename: string, intervalMs: number): void {
    // The worker's connection does the checkpoints; this one must not also try after each COMMIT.
    this.raw.pragma('wal_autocheckpoint = 0');
    const worker = new Worker(new URL('./checkpoint-worker.mjs', import.meta.url), {
      workerData: { filename, intervalMs, restartAboveFrames: RESTART_LOG_ABOVE_FRAMES },
    });
    worker.unref();
    worker.on('message', (m: { type: string; message?: string } & CheckpointProgress) => {
      if (m.type === 'checkpointed') this.lastCheckpoint = { log: m.log, checkpointed: m.checkpointed };
      if (m.type === 'error') process.emitWarning(`SQLite checkpoints are failing: ${m.message}`);
    });
    worker.on('error', (error) => {
      // Without checkpoints the log only grows; fall back to checkpointing on this connection.
      process.emitWarning(`SQLite checkpoint thread stopped (${error.message}); checkpointing on the main connection`);
      this.checkpointer = null;
      if (this.raw.open) this.raw.pragma('wal_autocheckpoint = 1000');
    });
    this.checkpointer = worker;
  }

  private async stopCheckpointer(): Promise<void> {
    const worker = this.checkpointer;
    if (!worker) return;
    this.checkpointer = null;
    await new Promise<void>((resolve) => {
      const done = (): void => resolve();
      worker.once('exit', done);
      worker.on('message', (m: { type: string }) => {
        if (m.type === 'stopped') void worker.terminate().then(done, done);
      });
      worker.postMessage('stop');
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing) {
      await this.flushing;
      if (this.queue.length > 0) return this.flush();
      return;
    }
    this.flushScheduled = false;
    const batch = this.queue.splice(0, this.maxBatch);
    if (batch.length === 0) return;
    let done!: () => void;
    this.flushing = new Promise<void>((r) => (done = r));
    const outcomes: { ok: boolean; value: unknown }[] = [];
    try {
      this.control.begin.run();
    } catch (error) {
      // Requeued (retryBusyBatch has scheduled the next flush), or failed with the error.
      if (!this.retryBusyBatch(batch, error)) for (const unit of batch) unit.reject(error);
      this.finishFlush(done);
      return;
    }
    this.busySince = null;
    try {
      for (const unit of batch) {
        this.control.savepoint.run();
        try {
          // A synchronous unit runs without yielding: a batch of them is one tight loop.
          const value = unit.sync ? unit.sync(this.syncExecutor) : await unit.fn!(this.executor);
          this.control.release.run();
          outcomes.push({ ok: true, value });
        } catch (error) {
          this.control.rollbackTo.run();
          this.control.release.run();
          outcomes.push({ ok: false, value: error });
        }
      }
      this.control.commit.run();
    } catch (error) {
      if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
      for (const unit of batch) unit.reject(error);
      this.finishFlush(done);
      return;
    }
    const answer = (): void =>
      batch.forEach((unit, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) unit.resolve(outcome.value);
        else unit.reject(outcome.value);
      });
    // The next batch may start now; this one is answered when its log frames are on disk.
    this.committed().then(answer, (error: unknown) => {
      for (const unit of batch) unit.reject(error);
    });
    this.finishFlush(done);
  }

  /**
   * BEGIN IMMEDIATE refused with SQLITE_BUSY: another connection holds the write lock (the admin CLI
   * writing, or the checkpoint thread starting the log over, during which SQLite can refuse at once
   * rather than wait in the busy handler). No unit of the batch has run, so the batch goes back to the
   * head of the queue and is tried again shortly, off this turn of the event loop; only a lock held
   * for BUSY_GIVE_UP_MS in all fails its callers.
   */
  private retryBusyBatch(batch: PendingUnit[], error: unknown): boolean {
    const code = (error as { code?: unknown }).code;
    if (typeof code !== 'string' || !code.startsWith('SQLITE_BUSY')) return false;
    const now = Date.now();
    this.busySince ??= now;
    if (now - this.busySince >= BUSY_GIVE_UP_MS) {
      this.busySince = null;
      return false;
    }
    this.queue.unshift(...batch);
    this.flushScheduled = true;
    setTimeout(() => void this.flush(), BUSY_RETRY_MS);
    return true;
  }

  private finishFlush(done: () => void): void {
    this.flushing = null;
    done();
    if (this.queue.length > 0 && !this.flushScheduled) this.scheduleFlush();
  }

  /**
   * Flushes from a later turn of the event loop (setImmediate), so every request already read off
   * the sockets joins the batch; while units keep arriving it waits up to MAX_GATHER_TURNS more turns.
   * Under load the clients answered by the previous COMMIT send their next request within a turn or
   * two, and one COMMIT for all of them is cheaper per unit than two half-size ones (every COMMIT
   * writes and fsyncs the pages it dirtied). When idle this costs one extra turn: microseconds.
   */
  private scheduleFlush(): void {
    this.flushScheduled = true;
    let turns = 0;
    let seen = this.queue.length;
    const tick = (): void => {
      const grew = this.queue.length > seen;
      seen = this.queue.length;
      if ((turns === 0 || grew) && turns < MAX_GATHER_TURNS && this.queue.length < this.maxBatch) {
        turns++;
        setImmediate(tick);
        return;
      }
      void this.flush();
    };
    setImmediate(tick);
  }

  private prepare(sql: string): Prepared {
    return cached(this.statements, this.raw, sql);
  }

  private allSync<T>(sql: string, params: readonly SqlParam[] = []): T[] {
    return allRows(this.prepare(sql), params) as T[];
  }
  private getSync<T>(sql: string, params: readonly SqlParam[] = []): T | undefined {
    return getRow(this.prepare(sql), params) as T | undefined;
  }
  private runSync(sql: string, params: readonly SqlParam[] = []): RunResult {
    const info = this.prepare(sql).stmt.run(...params);
    return { changes: info.changes };
  }
}
