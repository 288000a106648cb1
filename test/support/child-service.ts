import { spawn, type ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';

const ROOT = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? ok(address.port) : fail(new Error('no port'))));
    });
  });
}

/**
 * The real service in its own process (`node --import tsx src/main.ts`), for tests that must kill it
 * with SIGKILL and start it again on the same data directory.
 */
export class ChildService {
  readonly dataDir: string;
  readonly env: Record<string, string>;
  private child: ChildProcess | null = null;
  private output = '';
  port = 0;

  constructor(env: Record<string, string> = {}) {
    this.dataDir = mkdtempSync(join(tmpdir(), 'rbs-child-'));
    this.env = {
      APP_ENV: 'development',
      LOG_LEVEL: 'warn',
      MASTER_KEY: randomBytes(32).toString('hex'),
      DATA_DIR: this.dataDir,
      FAIR_CHAIN_LENGTH: '200',
      ...env,
    };
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
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

  /** Runs the admin CLI against this service's store and returns its JSON output. */
  async admin(...args: string[]): Promise<any> {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...this.env, LOG_LEVEL: 'silent' },
    });
    return JSON.parse(stdout);
  }
}
