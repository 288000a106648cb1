/**
 * The storage seam. Repositories are written once against `SqlExecutor` with `?` placeholders and a
 * SQL subset both engines share; each adapter (SQLite, PostgreSQL) decides how a transaction is run
 * and made durable. The SQLite adapter group-commits: many concurrent transactions share one COMMIT
 * (one fsync), each isolated by a savepoint, and every caller is answered only after that COMMIT.
 */
export type Dialect = 'sqlite' | 'postgres';
export type SqlParam = string | number | bigint | null | Buffer;

export interface RunResult {
  changes: number;
}

export interface SqlExecutor {
  readonly dialect: Dialect;
  all<T = Record<string, unknown>>(sql: string, params?: readonly SqlParam[]): Promise<T[]>;
  get<T = Record<string, unknown>>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined>;
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult>;
}

/**
 * The same statements without the awaits: a command that runs as one synchronous unit (SQLite's
 * `unit`). Nothing between its statements can interleave, so no promise hop is paid per statement.
 */
export interface SyncExecutor {
  readonly dialect: 'sqlite';
  all<T = Record<string, unknown>>(sql: string, params?: readonly SqlParam[]): T[];
  get<T = Record<string, unknown>>(sql: string, params?: readonly SqlParam[]): T | undefined;
  run(sql: string, params?: readonly SqlParam[]): RunResult;
}

export interface TransactionOptions {
  /** Serialise against other writers from the start (PostgreSQL: a row lock is still up to the caller). */
  label?: string;
}

export interface Database extends SqlExecutor {
  /**
   * Reads that must not wait behind writes (the player page): a connection of their own that sees
   * only committed, durable data and refuses to write (SQLite: a read-only connection; PostgreSQL: a
   * small pool of read-only sessions).
   */
  readonly reads: SqlExecutor;
  /**
   * Runs `fn` atomically. Resolves only once the transaction is durable. `fn` must touch nothing but
   * `tx` (no network, no timers): the SQLite adapter runs many such functions inside one COMMIT.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * SQLite only: runs `fn` synchronously as one unit of the next group commit (its own savepoint: a
   * throw rolls back its writes alone). Resolves with its value once the COMMIT is durable. A domain
   * command that needs nothing but the store runs this way with no await between its statements.
   */
  unit?<T>(fn: (tx: SyncExecutor) => T): Promise<T>;
  /**
   * PostgreSQL only: one statement in a transaction of its own (autocommit), sent as a named
   * prepared statement so the server parses and plans it once per connection. A domain command
   * that is a server-side function costs one round trip this way. Resolves once committed
   * (synchronous_commit as configured: on).
   */
  prepared?<T = Record<string, unknown>>(name: string, sql: string, params: readonly SqlParam[]): Promise<T[]>;
  /**
   * Takes a named lease that only one process holds at a time (PostgreSQL advisory lock on a
   * dedicated connection). Resolves to the lease, or null when another process holds it.
   */
  tryAcquireLease(name: string, options?: LeaseOptions): Promise<Lease | null>;
  close(): Promise<void>;
}

/**
 * How a service runs the one transaction of a write: `db.transaction` by default; under an
 * Idempotency-Key, one that also claims the key and stores the answer inside it
 * (IdempotencyService.keyedWrite). The same rule holds: `work` touches nothing but `tx`.
 */
export type WriteTransaction = <T>(work: (tx: SqlExecutor) => Promise<T>) => Promise<T>;

export interface LeaseOptions {
  /**
   * A holder that has not been heard from for this long loses the lease even if its connection
   * looks open (a frozen process, a host gone without closing its sockets), so a standby can take
   * over within a bounded time. The adapter keeps a live holder's session busy well within it.
   */
  silentForMs?: number;
}

export interface Lease {
  /** Resolves false once the lease has been lost (its connection died). */
  isHeld(): Promise<boolean>;
  /**
   * The first statement of each write the holder makes through the ordinary pool: throws LeaseLostError
   * (so `tx` rolls back with nothing written) unless this process still holds the lease. No gap between
   * check and commit: a process taking the lease over waits for every transaction that passed the fence
   * to end before it reads what to recover, and any transaction fenced after that is refused. A check
   * made before the transaction (isHeld) cannot promise this: the holder may freeze right after it.
   * PostgreSQL: a shared transaction lock on the lease's fence key, then a look in pg_locks that the
   * lease's own session still holds its lock. SQLite (one process per file): nothing to check.
   */
  fence(tx: SqlExecutor): Promise<void>;
  /**
   * Runs one statement as the holder: on PostgreSQL on the lease's own session, so it cannot
   * succeed once the lease is lost (that session ending is what frees the lock). Used for writes
   * that claim "the lease holder is alive", which no other process may make in its name.
   */
  runAsHolder(sql: string, params?: readonly SqlParam[]): Promise<RunResult>;
  release(): Promise<void>;
}

/** A write refused by Lease.fence: another process may hold the lease now, so nothing was written. */
export class LeaseLostError extends Error {
  constructor(readonly leaseName: string) {
    super(`the lease ${leaseName} is no longer held by this process`);
    this.name = 'LeaseLostError';
  }
}

/** `FOR UPDATE SKIP LOCKED` where the engine has row locks; SQLite's single writer needs none. */
export const skipLocked = (db: SqlExecutor): string => (db.dialect === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '');
/** Holds a shared row lock so a concurrent state change waits for this transaction (PostgreSQL). */
export const forShare = (db: SqlExecutor): string => (db.dialect === 'postgres' ? ' FOR SHARE' : '');
export const forUpdate = (db: SqlExecutor): string => (db.dialect === 'postgres' ? ' FOR UPDATE' : '');

/** Nullable numeric columns: PostgreSQL and SQLite both give numbers here, but null must stay null. */
export const nullableNumber = (v: number | string | null | undefined): number | null =>
  v === null || v === undefined ? null : Number(v);

/**
 * A keyset page cursor over a listing ordered `created_at DESC, id`: the last row of the previous
 * page. Rows written by one transaction share a created_at, so the id breaks the tie.
 */
export interface PageCursor {
  createdAt: number;
  id: string;
}

/**
 * Adds the condition that continues such a listing after `cursor` (`prefix`: the table's alias and a dot;
 * `columns`: the time and id columns, for a listing keyed by others in the same order).
 */
export function continueAfter(
  where: string[],
  params: SqlParam[],
  cursor: PageCursor,
  prefix = '',
  columns: { time: string; id: string } = { time: 'created_at', id: 'id' },
): void {
  const [time, id] = [`${prefix}${columns.time}`, `${prefix}${columns.id}`];
  where.push(`(${time} < ? OR (${time} = ? AND ${id} > ?))`);
  params.push(cursor.createdAt, cursor.createdAt, cursor.id);
}

/**
 * How a service read reaches the store. `readOnly`: the read-only path (`Database.reads`), for page
 * loads that must never wait behind a writer; the default reads through the primary connection.
 */
export interface ReadOptions {
  readOnly?: boolean;
}

/** The executor a read with these options uses. */
export const readerOf = (db: Database, options?: ReadOptions): SqlExecutor => (options?.readOnly ? db.reads : db);
