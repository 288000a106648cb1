import BetterSqlite3 from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Database, Lease, RunResult, SqlExecutor, SqlParam } from './database';

interface PendingUnit {
  fn: (tx: SqlExecutor) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface SqliteOptions {
  /** File path, or ':memory:' for tests. */
  filename: string;
  /** Upper bound on transactions folded into one COMMIT. */
  maxBatch?: number;
}

/** Upper bound on the extra event-loop turns a flush waits for more units (see scheduleFlush). */
const MAX_GATHER_TURNS = 4;

/**
 * better-sqlite3 is synchronous, so a "transaction" here is a queued unit. Units that arrive while
 * the event loop is busy are folded into one BEGIN IMMEDIATE … COMMIT with synchronous=FULL: one
 * fsync acknowledges the whole batch. Each unit runs inside its own SAVEPOINT, so one failing unit
 * rolls back alone and the others still commit.
 */
export class SqliteDatabase implements Database {
  readonly dialect = 'sqlite' as const;
  readonly raw: BetterSqlite3.Database;
  private readonly statements = new Map<string, BetterSqlite3.Statement>();
  private queue: PendingUnit[] = [];
  private flushScheduled = false;
  private flushing: Promise<void> | null = null;
  private closed = false;
  private readonly maxBatch: number;
  private readonly executor: SqlExecutor;
  // Prepared once: exec() would re-parse these four statements for every unit of every batch.
  private readonly control: Record<'begin' | 'savepoint' | 'release' | 'rollbackTo' | 'commit', BetterSqlite3.Statement>;

  constructor(options: SqliteOptions) {
    if (options.filename !== ':memory:') mkdirSync(dirname(options.filename), { recursive: true });
    this.raw = new BetterSqlite3(options.filename);
    this.raw.pragma('journal_mode = WAL');
    // FULL: every COMMIT is fsync'd before any caller is answered. Group commit pays for it.
    this.raw.pragma('synchronous = FULL');
    this.raw.pragma('foreign_keys = ON');
    // The admin CLI may write while the service runs; wait for the other writer instead of failing.
    this.raw.pragma('busy_timeout = 5000');
    this.maxBatch = options.maxBatch ?? 512;
    this.control = {
      begin: this.raw.prepare('BEGIN IMMEDIATE'),
      savepoint: this.raw.prepare('SAVEPOINT unit'),
      release: this.raw.prepare('RELEASE unit'),
      rollbackTo: this.raw.prepare('ROLLBACK TO unit'),
      commit: this.raw.prepare('COMMIT'),
    };
    const self = this;
    this.executor = {
      dialect: 'sqlite',
      all: async (sql, params) => self.allSync(sql, params),
      get: async (sql, params) => self.getSync(sql, params),
      run: async (sql, params) => self.runSync(sql, params),
    };
  }

  all<T>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    return Promise.resolve(this.allSync<T>(sql, params));
  }
  get<T>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    return Promise.resolve(this.getSync<T>(sql, params));
  }
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    return Promise.resolve(this.runSync(sql, params));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('database is closed'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.flushScheduled) this.scheduleFlush();
    });
  }

  async tryAcquireLease(): Promise<Lease | null> {
    // One process owns a SQLite file's engines; the lease is trivially held.
    return { isHeld: async () => !this.closed, release: async () => {} };
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.queue.length > 0 || this.flushing) {
      if (this.flushing) await this.flushing;
      else await this.flush();
    }
    if (this.raw.open) this.raw.close();
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
      for (const unit of batch) {
        this.control.savepoint.run();
        try {
          const value = await unit.fn(this.executor);
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
    batch.forEach((unit, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) unit.resolve(outcome.value);
      else unit.reject(outcome.value);
    });
    this.finishFlush(done);
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

  private prepare(sql: string): BetterSqlite3.Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.raw.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  private allSync<T>(sql: string, params: readonly SqlParam[] = []): T[] {
    return this.prepare(sql).all(...params) as T[];
  }
  private getSync<T>(sql: string, params: readonly SqlParam[] = []): T | undefined {
    return this.prepare(sql).get(...params) as T | undefined;
  }
  private runSync(sql: string, params: readonly SqlParam[] = []): RunResult {
    const info = this.prepare(sql).run(...params);
    return { changes: info.changes };
  }
}
