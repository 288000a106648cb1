import BetterSqlite3 from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import type { Database } from '../../src/store/database';
import { migrate } from '../../src/store/migrate';
import { PostgresDatabase } from '../../src/store/postgres';
import { SqliteDatabase } from '../../src/store/sqlite';
import { adminJson, initStore } from './admin-cli';
import { PG_URL, type StoreKind } from './harness';

const ROOT = resolve(import.meta.dirname, '../..');

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? ok(address.port) : fail(new Error('no port'))));
    });
  });
}

/** Resolves once something accepts TCP connections on the port (polling every few milliseconds). */
async function portAccepts(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      ok(true);
    });
    socket.once('error', () => ok(false));
  });
}

const schemaUrl = (schema: string): string => `${PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;

export interface ChildServiceOptions {
  /** SQLite under the data directory (default), or a throwaway schema in the test PostgreSQL. */
  store?: StoreKind;
  /** Other instances of one service: same store, same master key, their own port and process. */
  replicaOf?: ChildService;
}

/**
 * The real service in its own process (`node --import tsx src/main.ts`), for tests that must kill it
 * with SIGKILL and start it again on the same data directory (or PostgreSQL schema).
 */
export class ChildService {
  readonly dataDir: string;
  readonly env: Record<string, string>;
  readonly store: StoreKind;
  /** The PostgreSQL schema this service's tables live in (store 'postgres'). */
  readonly schema: string | null;
  /** The `--init` run that makes sure the store exists before the first admin command (once per service). */
  private storeInitialised: Promise<void> | null = null;
  private readonly owner: boolean;
  private child: ChildProcess | null = null;
  private output = '';
  port = 0;

  constructor(env: Record<string, string> = {}, options: ChildServiceOptions = {}) {
    const primary = options.replicaOf;
    this.store = primary?.store ?? options.store ?? 'sqlite';
    if (primary && this.store !== 'postgres') throw new Error('instances share a store only on PostgreSQL');
    this.owner = !primary;
    this.dataDir = primary?.dataDir ?? mkdtempSync(join(tmpdir(), 'rbs-child-'));
    this.schema = primary?.schema ?? (this.store === 'postgres' ? `t_${randomBytes(6).toString('hex')}` : null);
    this.env = {
      APP_ENV: 'test', // test: seeded fixture chains may play (see fair-chain.ts)
      LOG_LEVEL: 'warn',
      MASTER_KEY: primary?.env.MASTER_KEY ?? randomBytes(32).toString('hex'),
      DATA_DIR: this.dataDir,
      FAIR_CHAIN_LENGTH: '200',
      // The schema rides in the URL, as it would for a deployment that shares one database.
      ...(this.schema ? { DATABASE_URL: schemaUrl(this.schema) } : {}),
      ...env,
    };
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * Creates and migrates the store before the first start (the schema, on PostgreSQL), then lets
   * `setup` write into it: known seeds, say, so a test knows each round's outcome in advance.
   */
  async prepare(setup?: (db: Database) => Promise<void>): Promise<void> {
    if (this.schema && this.owner) {
      const admin = new pg.Client({ connectionString: PG_URL });
      await admin.connect();
      await admin.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await admin.end();
    }
    const db = await this.openStore();
    try {
      await setup?.(db);
    } finally {
      await db.close();
    }
  }

  /** The service's store, opened from the test (read what an operator would see, or seed it). */
  async openStore(): Promise<Database> {
    const db = this.schema
      ? new PostgresDatabase({ connectionString: PG_URL, schema: this.schema, poolSize: 2 })
      : new SqliteDatabase({ filename: join(this.dataDir, 'service.db') });
    await migrate(db);
    return db;
  }

  /**
   * Reads the store as an operator's support desk would, while the service runs or after it died:
   * a read-only SQLite connection, or a PostgreSQL session on the service's schema.
   */
  async rows<T>(sql: string): Promise<T[]> {
    if (!this.schema) {
      const db = new BetterSqlite3(join(this.dataDir, 'service.db'), { readonly: true });
      try {
        return db.prepare(sql).all() as T[];
      } finally {
        db.close();
      }
    }
    const c = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${this.schema}` });
    await c.connect();
    try {
      return (await c.query(sql)).rows as T[];
    } finally {
      await c.end();
    }
  }

  /** Drops the PostgreSQL schema (the owner only); the SQLite data directory is left to the OS. */
  async dispose(): Promise<void> {
    if (!this.schema || !this.owner) return;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${this.schema} CASCADE`);
    await admin.end();
  }

  /**
   * Starts the process. By default resolves once /healthz answers; with `until: 'port'` as soon as
   * the port accepts a TCP connection, which is the first moment a client could send anything.
   */
  async start(options: { until?: 'healthy' | 'port' } = {}): Promise<void> {
    if (!this.port) this.port = await freePort();
    this.output = '';
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...this.env, PORT: String(this.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (this.output += d.toString()));
    child.stderr!.on('data', (d) => (this.output += d.toString()));
    this.child = child;
    const deadline = Date.now() + 30_000;
    if (options.until === 'port') {
      for (;;) {
        if (child.exitCode !== null) throw new Error(`service exited during start:\n${this.output}`);
        if (await portAccepts(this.port)) return;
        if (Date.now() > deadline) throw new Error(`service did not listen in time:\n${this.output}`);
        await new Promise((r) => setTimeout(r, 2));
      }
    }
    for (;;) {
      if (child.exitCode !== null) throw new Error(`service exited during start:\n${this.output}`);
      try {
        const r = await request(`${this.baseUrl}/healthz`);
        await r.body.text();
        if (r.statusCode === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`service did not start in time:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** SIGKILL: no shutdown hooks, no flush, exactly what a crash looks like. */
  async kill9(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    this.child = null;
  }

  /** SIGSTOP / SIGCONT: the process freezes (a hung host, a stop-the-world pause) and thaws. */
  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  thaw(): void {
    this.child?.kill('SIGCONT');
  }

  /** SIGTERM: a graceful stop. Resolves with the exit code. */
  async stop(): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null) return child?.exitCode ?? null;
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    const code = await exited;
    this.child = null;
    return code;
  }

  logs(): string {
    return this.output;
  }

  /** Runs the admin CLI (in this process, src/cli/run-admin.ts) against this service's store: its JSON output. */
  async admin(...args: string[]): Promise<any> {
    const env = { ...process.env, ...this.env, LOG_LEVEL: 'silent' };
    // A test may set up its operators before the service's first start, as an operator does with --init.
    this.storeInitialised ??= initStore(env);
    await this.storeInitialised;
    return adminJson(env)(...args);
  }
}
