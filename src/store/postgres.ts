import pg from 'pg';
import { createHash } from 'node:crypto';
import {
  type Database,
  type Lease,
  LeaseLostError,
  type LeaseOptions,
  type RunResult,
  type SqlExecutor,
  type SqlParam,
} from './database';
import { StoreUnavailableError } from '../errors/unavailable';

// int8 columns hold ms timestamps and minor units, always below 2^53: read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

const placeholderCache = new Map<string, string>();
/** Repositories write `?`; PostgreSQL wants `$1…$n`. Our SQL never has `?` inside literals. */
function toPg(sql: string): string {
  let out = placeholderCache.get(sql);
  if (out === undefined) {
    let i = 0;
    out = sql.replace(/\?/g, () => `$${++i}`);
    placeholderCache.set(sql, out);
  }
  return out;
}

/**
 * The advisory keys of a lease: the lease key its holder's session keeps locked, and the fence key its
 * writes and a takeover meet on (Lease.fence). The lease key is derived as it always was, so processes
 * of an older version still contend for the same lease.
 */
export function leaseKeys(scope: string, name: string): { lease: bigint; fence: bigint } {
  const keyOf = (text: string) => createHash('sha256').update(text).digest().readBigInt64BE(0);
  return { lease: keyOf(`lease:${scope}:${name}`), fence: keyOf(`fence:${scope}:${name}`) };
}

/** How pg_locks shows a lock on a bigint advisory key: its high and low 32 bits, unsigned, objsubid 1. */
function advisoryLockColumns(key: bigint): { classid: string; objid: string } {
  return { classid: BigInt.asUintN(32, key >> 32n).toString(), objid: BigInt.asUintN(32, key).toString() };
}

/** Whether the session with this pid still holds the lease lock. */
const LEASE_HELD_BY_SQL = `SELECT EXISTS (
  SELECT 1 FROM pg_locks
  WHERE locktype = 'advisory' AND classid = ?::oid AND objid = ?::oid AND objsubid = 1
    AND mode = 'ExclusiveLock' AND granted AND pid = ?
) AS held`;

const IDLE_IN_TRANSACTION_TIMEOUT_MS = 5_000;

/** Socket errors of a server that is down or out of reach. */
const NETWORK_ERRORS: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/**
 * SQLSTATEs of a server that cannot serve now: class 08 (connection exceptions), shutting down (57P01,
 * 57P02), starting up (57P03), out of connection slots (53300), a session ended for idling in a
 * transaction (25P03).
 */
const SERVER_UNAVAILABLE = /^(08...|57P0[123]|53300|25P03)$/;
/**
 * node-postgres raises these without a code: the connection ended or is already gone, or the pool found
 * no connection within its timeout.
 */
const CONNECTION_GONE = new RegExp(
  [
    '^Connection terminated',
    '^Client was closed and is not queryable',
    '^Client has encountered a connection error',
    '^timeout exceeded when trying to connect',
    '^Query read timeout',
  ].join('|'),
);

/** How long a statement, or the wait for a pooled connection, may go unanswered by default (STORE_TIMEOUT_MS). */
export const DEFAULT_STORE_TIMEOUT_MS = 30_000;

/**
 * A failure to reach the store becomes a StoreUnavailableError, which the surfaces answer with 503 and
 * Retry-After; every other error (a constraint, a refusal a function raised) is passed on as it is.
 */
function unreachableAs(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  const unavailable =
    typeof code === 'string'
      ? NETWORK_ERRORS.has(code) || SERVER_UNAVAILABLE.test(code)
      : CONNECTION_GONE.test(error.message);
  return unavailable ? new StoreUnavailableError(error) : error;
}

type Run = (config: string | pg.QueryConfig, params?: readonly SqlParam[]) => Promise<pg.QueryResult>;

/** One statement on its own pooled connection, its failure to reach the store turned into StoreUnavailableError. */
function runOn(q: pg.Pool): Run {
  return async (config, params) => {
    try {
      return await q.query(config, params as unknown[]);
    } catch (error) {
      throw unreachableAs(error);
    }
  };
}

/**
 * Ends every connection of a pool that has waited longer than `timeoutMs` on one statement. A server that
 * stops answering (a stalled network path, a host gone without a reset, a server stuck on its disk) would
 * otherwise hold the call, and the connection, for as long as TCP takes to give up: many minutes. Ending a
 * connection with a statement in flight drops its socket, so the statement fails as "Connection
 * terminated" (StoreUnavailableError: a 503 the caller retries under its key) and the server rolls back
 * what it had not committed.
 *
 * Watched per statement, not with a timer per statement (which costs the hot path 10–30 µs a call here):
 * a pool query is one statement per checkout, so the checkout is timed; a transaction's connection is
 * timed only while one of its statements runs (the server's idle-in-transaction timeout bounds the rest),
 * so a long transaction of short statements (voiding a large round) is never cut off.
 */
class StatementWatch {
  private readonly since = new Map<pg.PoolClient, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    pool: pg.Pool,
    private readonly timeoutMs: number,
  ) {
    pool.on('acquire', (client) => this.busy(client));
    pool.on('release', (_error, client) => this.idle(client));
    pool.on('remove', (client) => this.idle(client as pg.PoolClient));
    this.timer = setInterval(() => this.sweep(), Math.max(25, Math.min(1_000, Math.floor(timeoutMs / 4))));
    this.timer.unref();
  }

  busy(client: pg.PoolClient): void {
    this.since.set(client, performance.now());
  }

  idle(client: pg.PoolClient): void {
    this.since.delete(client);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private sweep(): void {
    const now = performance.now();
    for (const [client, at] of this.since) {
      if (now - at < this.timeoutMs) continue;
      this.since.delete(client);
      (client as pg.PoolClient & pg.Client).end().catch(() => {});
    }
  }
}

/** A statement of a transaction, timed by the watch while it runs. */
function runIn(client: pg.PoolClient, watch: StatementWatch): Run {
  return async (config, params) => {
    watch.busy(client);
    try {
      return await client.query(config, params as unknown[]);
    } catch (error) {
      throw unreachableAs(error);
    } finally {
      watch.idle(client);
    }
  };
}

/** A pooled connection, or StoreUnavailableError when none can be had (the server down, none free in time). */
async function connectTo(pool: pg.Pool): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch (error) {
    throw unreachableAs(error);
  }
}

function executorFor(run: Run): SqlExecutor {
  return {
    dialect: 'postgres',
    async all<T>(sql: string, params: readonly SqlParam[] = []) {
      const r = await run(toPg(sql), params);
      return r.rows as T[];
    },
    async get<T>(sql: string, params: readonly SqlParam[] = []) {
      const r = await run(toPg(sql), params);
      return r.rows[0] as T | undefined;
    },
    async run(sql: string, params: readonly SqlParam[] = []): Promise<RunResult> {
      const r = await run(toPg(sql), params);
      return { changes: r.rowCount ?? 0 };
    },
  };
}

export interface PostgresOptions {
  connectionString: string;
  poolSize?: number;
  /**
   * The longest a statement may go unanswered, and a call may wait for a pooled connection or a new one
   * (STORE_TIMEOUT_MS; DEFAULT_STORE_TIMEOUT_MS): past it the call fails as StoreUnavailableError.
   */
  timeoutMs?: number;
  /** Isolates a test run's tables in its own schema. */
  schema?: string;
}

export class PostgresDatabase implements Database {
  readonly dialect = 'postgres' as const;
  readonly pool: pg.Pool;
  private readonly executor: SqlExecutor;
  private scope: string | undefined;
  /** A few read-only sessions of their own, so page reads never wait for a writer's pooled connection. */
  private readonly readPool: pg.Pool;
  readonly reads: SqlExecutor;
  private readonly timeoutMs: number;
  private readonly writeRun: Run;
  private readonly writeWatch: StatementWatch;
  private readonly readWatch: StatementWatch;

  constructor(readonly options: PostgresOptions) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
    this.pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: this.timeoutMs,
      options: options.schema ? `-c search_path=${options.schema}` : undefined,
      // Transactions here never wait on anything but their own statements (see Database.transaction),
      // so one idle this long belongs to a frozen or vanished process: the server ends it and frees its
      // row locks, which would otherwise block the next engine's takeover (voiding the round) forever.
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    });
    // An idle client that dies must not crash the process; the pool replaces it.
    this.pool.on('error', () => {});
    this.writeWatch = new StatementWatch(this.pool, this.timeoutMs);
    this.writeRun = runOn(this.pool);
    this.executor = executorFor(this.writeRun);
    const searchPath = options.schema ? `-c search_path=${options.schema} ` : '';
    this.readPool = new pg.Pool({
      connectionString: options.connectionString,
      max: 2,
      connectionTimeoutMillis: this.timeoutMs,
      options: `${searchPath}-c default_transaction_read_only=on`,
    });
    this.readPool.on('error', () => {});
    this.readWatch = new StatementWatch(this.readPool, this.timeoutMs);
    this.reads = executorFor(runOn(this.readPool));
  }

  /**
   * A pool for one run of the migrations, without the statement deadline: a migration may rewrite a large
   * table for minutes (docs/deployment.md, "Upgrades"). The caller ends it.
   */
  migrationPool(): pg.Pool {
    const pool = new pg.Pool({
      connectionString: this.options.connectionString,
      max: 2,
      options: this.options.schema ? `-c search_path=${this.options.schema}` : undefined,
      connectionTimeoutMillis: this.timeoutMs,
    });
    pool.on('error', () => {});
    return pool;
  }

  all<T>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    return this.executor.all<T>(sql, params);
  }
  get<T>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    return this.executor.get<T>(sql, params);
  }
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    return this.executor.run(sql, params);
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await connectTo(this.pool);
    // While a client is checked out the pool stops listening for its errors. A connection the server
    // ends between two statements (a restart, a failover, pg_terminate_backend, the idle-in-transaction
    // timeout) would then raise an unhandled 'error' and end the process. Kept here instead: the
    // transaction's next statement fails, and the dead client is dropped rather than pooled again.
    let lost: Error | undefined;
    const onLost = (error: Error): void => {
      lost ??= error;
    };
    client.on('error', onLost);
    // Its time between statements is the server's idle-in-transaction timeout's to bound.
    this.writeWatch.idle(client);
    const run = runIn(client, this.writeWatch);
    try {
      await run('BEGIN');
      const value = await fn(executorFor(run));
      await run('COMMIT');
      return value;
    } catch (error) {
      // A connection that failed, or still waits on an unanswered statement, is dropped, not rolled back:
      // the server rolls back what it had not committed once the connection goes.
      if (error instanceof StoreUnavailableError) lost ??= error;
      else await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.off('error', onLost);
      client.release(lost);
    }
  }

  async prepared<T>(name: string, sql: string, params: readonly SqlParam[]): Promise<T[]> {
    // Outside BEGIN … COMMIT the statement is its own transaction: one round trip, committed (and,
    // with synchronous_commit on, flushed to the server's log) before the result comes back.
    const r = await this.writeRun({ name, text: toPg(sql), values: params as unknown[] });
    return r.rows as T[];
  }

  async tryAcquireLease(name: string, options: LeaseOptions = {}): Promise<Lease | null> {
    // A session-level advisory lock lives exactly as long as its connection: if this process dies,
    // PostgreSQL drops the connection and the lock, and another instance takes over.
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      options: this.options.schema ? `-c search_path=${this.options.schema}` : undefined,
      // A stalled server must not hold the engine in tryLead or isHeld: unanswered, the lease is not held.
      connectionTimeoutMillis: this.timeoutMs,
      query_timeout: this.timeoutMs,
    });
    let alive = true;
    client.on('error', () => (alive = false));
    client.on('end', () => (alive = false));
    await client.connect();
    let keepAlive: NodeJS.Timeout | null = null;
    const end = async (): Promise<void> => {
      if (keepAlive) clearInterval(keepAlive);
      await client.end().catch(() => {});
    };
    try {
      const keys = leaseKeys(await this.leaseScope(client), name);
      const [key, fenceKey] = [keys.lease.toString(), keys.fence.toString()];
      const r = await client.query<{ ok: boolean; pid: number }>(
        'SELECT pg_try_advisory_lock($1) AS ok, pg_backend_pid() AS pid',
        [key],
      );
      const holderPid = r.rows[0]?.pid;
      if (!r.rows[0]?.ok || holderPid === undefined) {
        await end();
        return null;
      }
      // The takeover's barrier: wait for every fenced transaction of the previous holder still under
      // way (it passed its check before that holder's session ended) to commit or roll back. Once this
      // lock is granted, any later one finds the lease lock on this session, not its own, and is
      // refused; so the recovery that follows reads every round the previous holder will ever write.
      await client.query('SELECT pg_advisory_lock($1)', [fenceKey]);
      await client.query('SELECT pg_advisory_unlock($1)', [fenceKey]);
      const leaseLock = advisoryLockColumns(keys.lease);
      if (options.silentForMs) {
        // The server ends a session idle for this long, and the lock with it: a frozen holder, or one
        // whose host vanished without closing the socket, frees the lease instead of keeping it for
        // the hours TCP takes to notice. Live holders ping well within it, on real time (this is about
        // the connection, not game time). Before PostgreSQL 14 the setting does not exist: the lease
        // then lasts as long as the connection, as it always did.
        const timeout = String(options.silentForMs);
        await client.query(`SELECT set_config('idle_session_timeout', $1, false)`, [timeout]).catch(() => {});
        const ping = (): void => void client.query('SELECT 1').catch(() => (alive = false));
        keepAlive = setInterval(ping, Math.max(50, Math.floor(options.silentForMs / 3)));
        keepAlive.unref();
      }
      return {
        isHeld: async () => {
          if (!alive) return false;
          try {
            await client.query('SELECT 1');
            return true;
          } catch {
            return false;
          }
        },
        fence: async (tx) => {
          if (!alive) throw new LeaseLostError(name);
          // Two statements, in this order: a check made before the shared lock was granted could pass
          // just ahead of a takeover's barrier and let this transaction commit after its recovery read.
          await tx.get('SELECT pg_advisory_xact_lock_shared(?::bigint)', [fenceKey]);
          const fenced = await tx.get<{ held: boolean }>(LEASE_HELD_BY_SQL, [
            leaseLock.classid,
            leaseLock.objid,
            holderPid,
          ]);
          if (!fenced?.held) throw new LeaseLostError(name);
        },
        runAsHolder: async (sql, params = []) => {
          if (!alive) throw new Error(`the lease ${name} is lost`);
          const result = await client.query(toPg(sql), params as unknown[]);
          return { changes: result.rowCount ?? 0 };
        },
        release: async () => {
          if (!alive) return end();
          await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(() => {});
          await end();
        },
      };
    } catch (error) {
      await end();
      throw error;
    }
  }

  /**
   * What a lease name is scoped to: the schema the tables live in, so deployments (or test runs)
   * sharing one database in separate schemas never share an engine. The default schema keeps the
   * empty scope that keys have always used.
   */
  private async leaseScope(client: pg.Client): Promise<string> {
    if (this.options.schema) return this.options.schema;
    if (this.scope === undefined) {
      const r = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
      const schema = r.rows[0]?.schema ?? '';
      this.scope = schema === 'public' ? '' : schema;
    }
    return this.scope;
  }

  /**
   * One connection of its own that must log in and answer within `timeoutMs`. The pools have no
   * connect deadline (theirs would also bound the wait for a busy pool's free connection on the hot
   * paths), so a server that accepts TCP and then says nothing would otherwise hold the start forever.
   */
  async checkAnswers(timeoutMs: number): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
    });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
    } finally {
      await client.end().catch(() => {});
    }
  }

  async close(): Promise<void> {
    this.writeWatch.stop();
    this.readWatch.stop();
    await this.readPool.end();
    await this.pool.end();
  }
}
