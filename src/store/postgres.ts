import pg from 'pg';
import { createHash } from 'node:crypto';
import type { Database, Lease, RunResult, SqlExecutor, SqlParam } from './database';

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

type Queryable = pg.Pool | pg.PoolClient;

function executorFor(q: Queryable): SqlExecutor {
  return {
    dialect: 'postgres',
    async all<T>(sql: string, params: readonly SqlParam[] = []) {
      const r = await q.query(toPg(sql), params as unknown[]);
      return r.rows as T[];
    },
    async get<T>(sql: string, params: readonly SqlParam[] = []) {
      const r = await q.query(toPg(sql), params as unknown[]);
      return r.rows[0] as T | undefined;
    },
    async run(sql: string, params: readonly SqlParam[] = []): Promise<RunResult> {
      const r = await q.query(toPg(sql), params as unknown[]);
      return { changes: r.rowCount ?? 0 };
    },
  };
}

export interface PostgresOptions {
  connectionString: string;
  poolSize?: number;
  /** Isolates a test run's tables in its own schema. */
  schema?: string;
}

export class PostgresDatabase implements Database {
  readonly dialect = 'postgres' as const;
  readonly pool: pg.Pool;
  private readonly executor: SqlExecutor;
  /** A few read-only sessions of their own, so page reads never wait for a writer's pooled connection. */
  private readonly readPool: pg.Pool;
  readonly reads: SqlExecutor;

  constructor(readonly options: PostgresOptions) {
    this.pool = new pg.Pool({
      connectionString: options.connectionString,
      max: options.poolSize ?? 10,
      options: options.schema ? `-c search_path=${options.schema}` : undefined,
    });
    // An idle client that dies must not crash the process; the pool replaces it.
    this.pool.on('error', () => {});
    this.executor = executorFor(this.pool);
    const searchPath = options.schema ? `-c search_path=${options.schema} ` : '';
    this.readPool = new pg.Pool({
      connectionString: options.connectionString,
      max: 2,
      options: `${searchPath}-c default_transaction_read_only=on`,
    });
    this.readPool.on('error', () => {});
    this.reads = executorFor(this.readPool);
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
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const value = await fn(executorFor(client));
      await client.query('COMMIT');
      return value;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async tryAcquireLease(name: string): Promise<Lease | null> {
    // A session-level advisory lock lives exactly as long as its connection: if this process dies,
    // PostgreSQL drops the connection and the lock, and another instance takes over.
    const key = createHash('sha256').update(`lease:${this.options.schema ?? ''}:${name}`).digest().readBigInt64BE(0);
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      options: this.options.schema ? `-c search_path=${this.options.schema}` : undefined,
    });
    let alive = true;
    client.on('error', () => (alive = false));
    client.on('end', () => (alive = false));
    await client.connect();
    const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [key.toString()]);
    if (!r.rows[0]?.ok) {
      await client.end();
      return null;
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
      release: async () => {
        if (!alive) return;
        await client.query('SELECT pg_advisory_unlock($1)', [key.toString()]).catch(() => {});
        await client.end().catch(() => {});
      },
    };
  }

  async close(): Promise<void> {
    await this.readPool.end();
    await this.pool.end();
  }
}
