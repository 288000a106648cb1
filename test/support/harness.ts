import { crashPointOf } from '../../src/games/crash/crash-rules';
import { createHash, randomBytes } from 'node:crypto';
import { DEFAULT_BUSTABIT_SALT } from '../../src/config/game-defaults';
import pg from 'pg';
import type { Logger } from 'pino';
import { request } from 'undici';
import { createApp, type App } from '../../src/app';
import type { Clock, FakeClock } from '../../src/clock/clock';
import { loadConfig, type Config } from '../../src/config/config';
import type { OperatorSettingsPatch } from '../../src/operators/operator';
import { signRequest } from '../../src/signing/request-signature';
import type { Database, SqlParam } from '../../src/store/database';
import { migrate } from '../../src/store/migrate';
import { PostgresDatabase } from '../../src/store/postgres';
import { SqliteDatabase } from '../../src/store/sqlite';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type StoreKind = 'sqlite' | 'postgres';
export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Service environment for a test instance on the test Redis, under a key prefix of its own. */
export const redisEnv = (prefix = `test-${randomBytes(6).toString('hex')}:`): Record<string, string> => ({
  REDIS_URL,
  REDIS_KEY_PREFIX: prefix,
});

/**
 * Which stores the suites run against. Both by default; CI must not lose PostgreSQL silently, so
 * when it is unreachable the PostgreSQL suites fail rather than skip (see pgAvailable()).
 */
export const STORES: StoreKind[] = (process.env.TEST_STORES?.split(',') as StoreKind[] | undefined) ?? [
  'sqlite',
  'postgres',
];

/** A fresh, migrated database: a temp SQLite file, or a throwaway schema in the test PostgreSQL. */
export async function freshDatabase(
  kind: StoreKind,
  /**
   * PostgreSQL: where the store connects (a relay in front of the test server, say; the schema is made on
   * PG_URL), and its statement timeout.
   */
  postgres: { connectVia?: string; timeoutMs?: number } = {},
): Promise<{ db: Database; dispose(): Promise<void>; url: string | null; dataDir: string; schema?: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-test-'));
  if (kind === 'sqlite') {
    const db = new SqliteDatabase({ filename: join(dataDir, 'service.db') });
    await migrate(db);
    return { db, url: null, dataDir, dispose: () => db.close() };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const connectVia = postgres.connectVia ?? PG_URL;
  const db = new PostgresDatabase({ connectionString: connectVia, schema, timeoutMs: postgres.timeoutMs });
  await migrate(db);
  return {
    db,
    url: connectVia,
    dataDir,
    schema,
    dispose: async () => {
      await db.close();
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA ${schema} CASCADE`);
      await c.end();
    },
  };
}

async function replicaDatabase(
  primary: TestApp,
): Promise<{ db: Database; dispose(): Promise<void>; url: string | null; dataDir: string; schema?: string }> {
  if (!primary.schema) throw new Error('replicas share a PostgreSQL schema; start the primary with store: postgres');
  const db = new PostgresDatabase({ connectionString: PG_URL, schema: primary.schema });
  await migrate(db);
  return { db, url: PG_URL, dataDir: primary.config.dataDir, schema: primary.schema, dispose: () => db.close() };
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    APP_ENV: 'test',
    PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    MASTER_KEY: randomBytes(32).toString('hex'),
    FAIR_CHAIN_LENGTH: '200',
    ...overrides,
  });
}

export interface TestApp {
  app: App;
  schema?: string;
  baseUrl: string;
  config: Config;
  close(): Promise<void>;
  createOperator(input?: {
    name?: string;
    walletUrl?: string | null;
    mode?: 'live' | 'test';
    settings?: OperatorSettingsPatch;
  }): Promise<TestOperator>;
}

export interface TestOperator {
  id: string;
  apiKey: string;
  apiSecret: string;
}

/** Starts the whole service on an ephemeral port against a fresh store, as the real entry point does. */
export async function startTestApp(
  options: {
    store?: StoreKind;
    env?: Record<string, string>;
    clock?: Clock;
    engines?: boolean;
    logger?: Logger;
    beforeStart?: (db: Database) => Promise<void>;
    /** Another instance to share a PostgreSQL schema (and master key) with: a second replica. */
    replicaOf?: TestApp;
    /** PostgreSQL: the URL the app's store connects to instead of PG_URL (a relay in front), its timeout. */
    postgres?: { connectVia?: string; timeoutMs?: number };
  } = {},
): Promise<TestApp> {
  const fresh = options.replicaOf
    ? await replicaDatabase(options.replicaOf)
    : await freshDatabase(options.store ?? 'sqlite', options.postgres);
  await options.beforeStart?.(fresh.db);
  const base = options.replicaOf?.config;
  const config = {
    ...testConfig({
      DATA_DIR: fresh.dataDir,
      ...(base?.masterKey ? { MASTER_KEY: base.masterKey } : {}),
      ...(options.env ?? {}),
    }),
    runEngines: options.engines ?? true,
  };
  const app = await createApp(config, { db: fresh.db, clock: options.clock, logger: options.logger });
  await app.http.listen({ host: '127.0.0.1', port: 0 });
  await app.startBackground();
  const address = app.http.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    app,
    config,
    schema: fresh.schema,
    baseUrl: `http://127.0.0.1:${port}`,
    async close() {
      await app.stop();
      if (fresh.schema && !options.replicaOf) await fresh.dispose().catch(() => {});
    },
    async createOperator(input = {}) {
      const o = await app.services.operators.create({
        name: input.name ?? 'Test operator',
        walletUrl: input.walletUrl ?? null,
        mode: input.mode,
        settings: input.settings,
      });
      return { id: o.id, apiKey: o.apiKey, apiSecret: o.apiSecret };
    },
  };
}

export interface SignedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

export type SurfaceName = 'A' | 'B';
const HEADER_NAMES = {
  A: { key: 'x-api-key', signature: 'x-signature', timestamp: 'x-timestamp' },
  B: { key: 'X-Operator-Key', signature: 'X-Signature', timestamp: 'X-Timestamp' },
} as const;

/** An operator's HTTP client that signs like an integrator would: over the exact bytes it sends. */
export function client(baseUrl: string, operator: TestOperator, surface: SurfaceName = 'A') {
  const names = HEADER_NAMES[surface];
  return async function call(
    method: string,
    path: string,
    body?: unknown,
    extra: {
      headers?: Record<string, string>;
      rawBody?: string;
      timestamp?: number;
      secret?: string;
      idempotencyKey?: string;
    } = {},
  ): Promise<SignedResponse> {
    const raw = extra.rawBody ?? (body === undefined ? '' : JSON.stringify(body));
    const timestamp = String(extra.timestamp ?? Date.now());
    const headers: Record<string, string> = {
      [names.key]: operator.apiKey,
      [names.timestamp]: timestamp,
      [names.signature]: signRequest(extra.secret ?? operator.apiSecret, method, path, timestamp, raw),
      ...(raw ? { 'content-type': 'application/json' } : {}),
      ...(extra.idempotencyKey ? { 'idempotency-key': extra.idempotencyKey } : {}),
      ...(extra.headers ?? {}),
    };
    const res = await request(`${baseUrl}${path}`, { method: method as 'GET', headers, body: raw || undefined });
    const text = await res.body.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.statusCode, headers: res.headers as SignedResponse['headers'], body: parsed, text };
  };
}

/** Polls until `check` returns a value (not undefined/false), or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs = 10_000,
  everyMs = 50,
  label = '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v as T;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline)
      throw lastError instanceof Error
        ? lastError
        : new Error(`condition not met in time${label ? `: ${label}` : ''} (${check.toString().slice(0, 200)})`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Makes the next rounds of `game` play these seeds, in order, so tests know each outcome in advance. */
/**
 * Seeds a test chose, played in order. They form no hash chain, so they are recorded as a fixture
 * (playable only with APP_ENV=test) with the salt their outcomes were chosen under: bustabit's for
 * Crash, none for Stock Race (the race then keys on the seed itself).
 */
export function withSeeds(game: 'crash' | 'stock_race', seeds: string[]) {
  const chainId = `fixture-${game}`;
  return async (db: Database): Promise<void> => {
    await db.transaction(async (tx) => {
      for (const [i, seed] of seeds.entries()) {
        const row = [game, chainId, i, seed];
        await tx.run('INSERT INTO fair_chains (game, chain_id, idx, hash) VALUES (?, ?, ?, ?)', row);
      }
      const commitment = createHash('sha256')
        .update(seeds[0] ?? '')
        .digest('hex');
      await tx.run(
        `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at, salt, salt_fixed_at)
         VALUES (?, ?, ?, 'fixture', ?, 0, ?, 0)`,
        [chainId, game, seeds.length, commitment, game === 'crash' ? DEFAULT_BUSTABIT_SALT : null],
      );
      await tx.run('INSERT INTO fair_chain_cursor (game, chain_id, next_idx, length) VALUES (?, ?, 0, ?)', [
        game,
        chainId,
        seeds.length,
      ]);
    });
  };
}

/** bustabit v2 games with published results (see src/games/crash/fairness.test.ts). */
export const KNOWN_CRASH_SEEDS = {
  x126: 'b2acd37fbdb5509926ab5d7329704c840f8467266c90019682f3b260a029bdba',
  x118: '82886b71b3b26e4b162bbdf4e7024f50f6a7250c207fb9ce497ad56a3e7e700a',
  x377: 'b459e199bac1342bf22d7aa6d19180aff35ab69f453d809949aab3e8d5e545aa',
};

/**
 * Moves a fake clock in steps of `stepMs` until `check` holds (at most `maxSteps` steps): the engines'
 * store writes run between the steps.
 */
export async function advanceUntil<T>(
  clock: FakeClock,
  check: () => Promise<T | undefined | false>,
  stepMs = 500,
  maxSteps = 400,
): Promise<T> {
  for (let i = 0; i < maxSteps; i++) {
    const v = await check();
    if (v !== undefined && v !== false) return v as T;
    await clock.advanceAsync(stepMs);
  }
  throw new Error('condition not reached');
}

/** Seeds of `count` Crash rounds that climb past 100x (over a minute): only a failover ends them in a test. */
export function longRoundSeeds(count: number): string[] {
  const seeds: string[] = [];
  while (seeds.length < count) {
    const seed = randomBytes(32).toString('hex');
    if (crashPointOf(seed, DEFAULT_BUSTABIT_SALT, 100) >= 10_000) seeds.push(seed);
  }
  return seeds;
}

/** Seeds of `n` short Crash rounds (1.18x and 1.26x by turns, a few seconds each): tests wait for round ends. */
export function shortCrashSeeds(n: number): string[] {
  return Array.from({ length: n }, (_, i) => (i % 2 ? KNOWN_CRASH_SEEDS.x126 : KNOWN_CRASH_SEEDS.x118));
}

/**
 * Puts `around` between a PostgreSQL store and every one of its prepared calls (the one-unit bet
 * commands), before the app starts: a test can count, inspect or hold them. `around` runs the call
 * with `proceed`.
 */
export function aroundPrepared(
  store: Database,
  around: (name: string, params: readonly SqlParam[], proceed: () => Promise<unknown[]>) => Promise<unknown[]>,
): void {
  const prepared = store.prepared!.bind(store);
  (store as { prepared: typeof prepared }).prepared = async <T>(
    name: string,
    sql: string,
    params: readonly SqlParam[],
  ): Promise<T[]> => (await around(name, params, () => prepared(name, sql, params))) as T[];
}
