import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ChildService, freePort } from '../support/child-service';
import { eventually, PG_URL, STORES } from '../support/harness';

/**
 * The process as an operator's SRE sees it: what a second stop signal does to a drain, and what the
 * service says on stderr (and how fast it gives up) when a dependency is not there at start.
 * Real processes (test/support/child-service.ts).
 */

const ROOT = resolve(import.meta.dirname, '..', '..');
const PASSWORD = 'n0t-in-any-log-9d2f';

const started: ChildService[] = [];
const silentServers: Server[] = [];
const heldSockets: Socket[] = [];
afterEach(async () => {
  for (const s of started.splice(0)) {
    await s.kill9();
    await s.dispose();
  }
  for (const socket of heldSockets.splice(0)) socket.destroy();
  for (const server of silentServers.splice(0)) await new Promise((r) => server.close(r));
});

const service = (env: Record<string, string>, options: ConstructorParameters<typeof ChildService>[1] = {}) => {
  const s = new ChildService(env, options);
  started.push(s);
  return s;
};

const readyzStatus = async (svc: ChildService): Promise<number> => {
  const r = await request(`${svc.baseUrl}/readyz`);
  await r.body.text();
  return r.statusCode;
};

/** The process id, as the service logs it in every line (here: its "service ready" line at LOG_LEVEL=info). */
function pidOf(svc: ChildService): number {
  const ready = svc
    .logs()
    .split('\n')
    .find((line) => line.includes('"service ready"'));
  if (!ready) throw new Error(`no "service ready" line:\n${svc.logs()}`);
  return (JSON.parse(ready) as { pid: number }).pid;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * A signal within a second of the first is the same stop relayed by a parent (src/main.ts); the tests
 * that mean a second request wait this long, in real time, because the process measures real time.
 */
const pastTheRepeatWindow = () => new Promise((r) => setTimeout(r, 1_500));

describe.each(STORES)('a second stop signal during the drain (%s)', (store) => {
  // A drain far longer than the test may wait: only the second signal can end the process in time.
  const env = { LOG_LEVEL: 'info', DRAIN_DELAY_MS: '120000', SHUTDOWN_GRACE_MS: '10000' };

  it('SIGTERM twice: exits at once with 143, one log line, and a restart takes the engines back', async () => {
    const svc = service(env, { store });
    await svc.prepare();
    await svc.start();
    await eventually(async () => (await readyzStatus(svc)) === 200, 30_000);
    const pid = pidOf(svc);

    process.kill(pid, 'SIGTERM');
    await eventually(async () => (await readyzStatus(svc)) === 503, 10_000, 20);
    await pastTheRepeatWindow();
    const t0 = performance.now();
    process.kill(pid, 'SIGTERM');
    await eventually(async () => !alive(pid), 20_000, 20, 'exit after the second SIGTERM');
    const ms = performance.now() - t0;

    expect(await svc.stop()).toBe(143); // already exited: stop() only reads the code
    expect(ms).toBeLessThan(15_000);
    const said = svc
      .logs()
      .split('\n')
      .filter((l) => l.includes('second signal during shutdown'));
    expect(said).toHaveLength(1);
    expect(JSON.parse(said[0]!)).toMatchObject({ level: 40, signal: 'SIGTERM' });

    // An exit mid-drain is a crash the service recovers from: the next process is ready and runs
    // both games (no lease of the dead one is left standing in its way).
    await svc.start();
    await eventually(async () => (await readyzStatus(svc)) === 200, 30_000);
    const metrics = await (await request(`${svc.baseUrl}/metrics`)).body.text();
    expect(metrics).toMatch(/rbs_round_engine_leader\{game="crash"\} 1/);
    expect(metrics).toMatch(/rbs_round_engine_leader\{game="stock_race"\} 1/);
  }, 120_000);
});

describe('Ctrl-C twice', () => {
  it('the second SIGINT ends the drain at once with exit 130', async () => {
    const svc = service({ LOG_LEVEL: 'info', DRAIN_DELAY_MS: '120000' });
    await svc.start();
    const pid = pidOf(svc);

    process.kill(pid, 'SIGINT');
    await eventually(async () => (await readyzStatus(svc)) === 503, 10_000, 20);
    await pastTheRepeatWindow();
    process.kill(pid, 'SIGINT');
    await eventually(async () => !alive(pid), 20_000, 20, 'exit after the second SIGINT');

    expect(await svc.stop()).toBe(130);
    expect(svc.logs()).toContain('"signal":"SIGINT","msg":"second signal during shutdown');
  }, 90_000);
});

/**
 * `npm start` and tsx pass a stop signal on to the service, and systemd (KillMode=control-group) or a
 * terminal's Ctrl-C also send it to every process of the group: one stop reaches the service twice.
 */
describe('one stop delivered twice', () => {
  const env = { LOG_LEVEL: 'info', DRAIN_DELAY_MS: '2000' };

  it('two SIGTERMs back to back: the drain runs to its end and the process exits 0', async () => {
    const svc = service(env);
    await svc.start();
    const pid = pidOf(svc);
    const t0 = performance.now();
    process.kill(pid, 'SIGTERM');
    process.kill(pid, 'SIGTERM');
    await eventually(async () => !alive(pid), 30_000, 20, 'exit after the drain');

    expect(await svc.stop()).toBe(0);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(2_000);
    expect(svc.logs()).not.toContain('second signal during shutdown');
  }, 90_000);
});

interface FailedStart {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Starts the service with `env` and waits for it to exit by itself, stdout and stderr apart. A process
 * still running after `limitMs` has hung: it is killed and the test sees `code: null`.
 */
async function startExpectingFailure(env: Record<string, string>, limitMs = 60_000): Promise<FailedStart> {
  const settings = new ChildService(env);
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...settings.env, PORT: String(await freePort()) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d.toString()));
  child.stderr!.on('data', (d) => (stderr += d.toString()));
  const hung = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  clearTimeout(hung);
  return { code, stdout, stderr, ms: performance.now() - t0 };
}

/** A TCP server that accepts connections and never says a word: a dependency that hangs. */
async function silentServer(): Promise<number> {
  const server = createServer((socket) => {
    socket.on('error', () => undefined);
    heldSockets.push(socket);
  });
  silentServers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

/** One line on stderr, the dependency named, no password anywhere, a failure exit code. */
function expectOneClearLine(run: FailedStart, line: RegExp, password = PASSWORD): void {
  expect(run.code, `stderr: ${run.stderr}`).toBe(1);
  const lines = run.stderr.split('\n').filter((l) => l.trim() !== '');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(line);
  expect(`${run.stdout}${run.stderr}`).not.toContain(password);
}

describe('a dependency that is not there at start', () => {
  /** Where the service is pointed, with the password it must never print, and how the line names it. */
  const redisAt = (port: number) => ({
    env: { REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:${port}`, DATABASE_URL: '' },
    named: `Redis at redis://127\\.0\\.0\\.1:${port} \\(REDIS_URL\\)`,
  });
  const postgresAt = (port: number) => ({
    env: { DATABASE_URL: `postgres://svc:${PASSWORD}@127.0.0.1:${port}/betting`, REDIS_URL: '' },
    named: `PostgreSQL at postgres://svc@127\\.0\\.0\\.1:${port}/betting \\(DATABASE_URL\\)`,
  });

  // A loop rather than it.each: each test keeps its whole name (it.each quotes and shortens a $title).
  const unreachable = [
    {
      title: 'Redis refusing connections: one line naming Redis and its address, exit 1',
      listen: freePort,
      target: redisAt,
      cause: '.*ECONNREFUSED',
      withinMs: 45_000,
    },
    {
      title: 'Redis accepting connections but never answering: gives up in bounded time, naming Redis',
      listen: silentServer,
      target: redisAt,
      cause: 'no answer',
      withinMs: 45_000,
    },
    {
      title: 'PostgreSQL refusing connections: one line naming PostgreSQL and its address, no password',
      listen: freePort,
      target: postgresAt,
      cause: '.*ECONNREFUSED',
      withinMs: 45_000,
    },
    {
      title: 'PostgreSQL accepting connections but never answering: exits 1 in bounded time instead of hanging',
      listen: silentServer,
      target: postgresAt,
      cause: 'no answer within 10 s$',
      // 10 s of waiting for the server plus a start-up on a loaded machine; without the bound it never ends.
      withinMs: 50_000,
    },
  ];
  for (const { title, listen, target, cause, withinMs } of unreachable) {
    it(title, async () => {
      // A free port nothing listens on refuses connections; a silent server accepts them and never answers.
      const { env, named } = target(await listen());
      const run = await startExpectingFailure(env);
      expectOneClearLine(run, new RegExp(`^failed to start: cannot connect to ${named}: ${cause}`));
      expect(run.ms).toBeLessThan(withinMs);
    }, 90_000);
  }

  it('PostgreSQL without the database: one line naming PostgreSQL and the missing database', async () => {
    // The test server's own credentials (it must let us in to say the database is missing); a server
    // that trusts local connections, as the default one does, is handed a password it never checks.
    const url = new URL(PG_URL);
    const password = url.password || PASSWORD;
    url.password = password;
    url.pathname = '/no_such_database_here';
    url.search = '';
    const run = await startExpectingFailure({ DATABASE_URL: url.toString(), REDIS_URL: '' });
    const where = `${url.protocol}//${url.username}@${url.host}/no_such_database_here`.replace(/\./g, '\\.');
    expectOneClearLine(
      run,
      new RegExp(`^failed to start: cannot connect to PostgreSQL at ${where} \\(DATABASE_URL\\): .*does not exist`),
      password,
    );
  }, 90_000);

  it('SQLite with a DATA_DIR that cannot be created: one line naming SQLite and the path', async () => {
    const settings = new ChildService();
    const notADirectory = join(settings.dataDir, 'a-file');
    writeFileSync(notADirectory, '');
    const dataDir = join(notADirectory, 'data');
    const run = await startExpectingFailure({ DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' });
    expectOneClearLine(
      run,
      new RegExp(`^failed to start: cannot open the SQLite store at ${dataDir}/service\\.db \\(DATA_DIR\\): ENOTDIR`),
    );
  }, 90_000);
});
