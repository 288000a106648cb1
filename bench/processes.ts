/**
 * Child processes for the benchmark: the service and the bare baseline each run in their own Node
 * process, started the way an operator would start them, so the load generator never shares an
 * event loop with the code it measures.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';

export const ROOT = resolve(import.meta.dirname, '..');
/** Fixed (32 bytes, hex) so the service, the admin CLI and the bench all open the same secrets. */
export const BENCH_MASTER_KEY = 'b3'.repeat(32);
export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => ok(port));
    });
  });
}

export interface Store {
  kind: 'sqlite' | 'postgres';
  dataDir: string;
  /** DATABASE_URL for the children: a database created for this run alone. */
  databaseUrl: string | null;
  dispose(): Promise<void>;
}

/**
 * A fresh temp DATA_DIR, and for PostgreSQL a fresh database on the given server, dropped afterwards.
 * A database rather than a schema: the service has no schema setting, and a schema chosen through
 * the URL's search_path is not where the migrator keeps its bookkeeping (it uses `public`), so a
 * server whose `public` is already migrated would leave the new schema empty.
 */
export async function freshStore(pgUrl: string | null): Promise<Store> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-bench-'));
  if (!pgUrl) return { kind: 'sqlite', dataDir, databaseUrl: null, dispose: async () => {} };
  const name = `bench_${randomBytes(5).toString('hex')}`;
  const admin = async (sql: string): Promise<void> => {
    const c = new pg.Client({ connectionString: pgUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(pgUrl);
  url.pathname = `/${name}`;
  return {
    kind: 'postgres',
    dataDir,
    databaseUrl: url.toString(),
    dispose: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

export function serviceEnv(store: Store, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    APP_ENV: 'development',
    LOG_LEVEL: 'warn',
    MASTER_KEY: BENCH_MASTER_KEY,
    DATA_DIR: store.dataDir,
    FAIR_CHAIN_LENGTH: '2000',
    ...extra,
  };
  if (store.databaseUrl) env.DATABASE_URL = store.databaseUrl;
  else delete env.DATABASE_URL;
  return env;
}

/** `npm run -s admin -- …`: prints one JSON object on stdout. */
export async function admin(env: NodeJS.ProcessEnv, args: string[], cwd = ROOT): Promise<Record<string, any>> {
  return new Promise((ok, fail) => {
    const options = { cwd, env, maxBuffer: 1 << 20 };
    execFile('npm', ['run', '-s', 'admin', '--', ...args], options, (error, stdout, stderr) => {
      if (error) return fail(new Error(`admin ${args.join(' ')} failed: ${stderr || error.message}`));
      try {
        ok(JSON.parse(stdout));
      } catch {
        fail(new Error(`admin ${args.join(' ')} printed no JSON: ${stdout}`));
      }
    });
  });
}

export interface Child {
  proc: ChildProcess;
  baseUrl: string;
  port: number;
  /** Null while the process runs; otherwise how it ended ("code 1", "signal SIGKILL"). */
  ended(): string | null;
  stop(): Promise<number | null>;
}

/**
 * A command line that runs `command args…` with its open-files limit raised to `limit` (or to the hard
 * limit, when that is lower and the user may not raise it): a process holding thousands of sockets.
 */
export function withOpenFiles(limit: number, command: string, args: string[], cpus?: string): [string, string[]] {
  // Pinned to `cpus` when given (taskset): a process with cores of its own, away from its load generator.
  const pin = cpus ? `taskset -c ${cpus} ` : '';
  const raise = `ulimit -n ${limit} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec ${pin}"$0" "$@"`;
  return ['bash', ['-c', raise, command, ...args]];
}

/**
 * Starts `node --import tsx <entry>` (in `cwd`, this checkout by default) and resolves once
 * GET /healthz answers 200 (within 180 s). `launch` raises the process's open-files limit first, and pins it to CPUs.
 */
export async function startChild(
  entry: string,
  env: NodeJS.ProcessEnv,
  nodeArgs: string[] = [],
  cwd = ROOT,
  launch?: { openFiles: number; cpus?: string },
): Promise<Child> {
  const port = await freePort();
  const node: [string, string[]] = [process.execPath, [...nodeArgs, '--import', 'tsx', entry]];
  const [command, args] = launch ? withOpenFiles(launch.openFiles, ...node, launch.cpus) : node;
  const proc = spawn(command, args, {
    cwd,
    env: { ...env, PORT: String(port) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise<number | null>((ok) => proc.once('exit', (code) => ok(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  // A shared host under heavy load has taken over a minute to compile and start the service.
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${entry} exited with code ${proc.exitCode} before it was ready`);
    try {
      const res = await fetch(`${baseUrl}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`${entry} did not become ready within 180 s`);
    }
    await sleep(100);
  }
  return {
    proc,
    baseUrl,
    port,
    ended() {
      if (proc.exitCode !== null) return `code ${proc.exitCode}`;
      if (proc.signalCode !== null) return `signal ${proc.signalCode}`;
      return null;
    },
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

// USER_HZ: the unit of /proc/<pid>/stat times; 100 on every mainstream Linux build.
const CLOCK_TICKS = 100;

/**
 * CPU seconds (user + system, all threads) a process has used so far, from /proc; null elsewhere.
 * Per-request CPU cost is far less sensitive to a noisy shared machine than requests per second.
 */
export function cpuSeconds(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces; fields are counted after its closing paren.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
