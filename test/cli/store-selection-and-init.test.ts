import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { adminCli } from '../support/admin-cli';
import { freePort } from '../support/child-service';
import { client, eventually, PG_URL } from '../support/harness';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

/** `npm run -s admin -- …` as a second terminal runs it: exit code, stdout, stderr. */
async function terminal(env: NodeJS.ProcessEnv, args: string[], cwd = ROOT) {
  return run('npm', ['run', '-s', 'admin', '--', ...args], { cwd, env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

const lastJson = (stderr: string) => JSON.parse(stderr.trim().split('\n').at(-1) ?? '');

/** The environment of a fresh terminal: no store settings of its own. */
function bareEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', ...extra };
  for (const name of ['DATA_DIR', 'DATABASE_URL', 'MASTER_KEY', 'APP_ENV']) if (!(name in extra)) delete env[name];
  return env;
}

describe('admin CLI: which store it acts on', () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  it('refuses a DATA_DIR with no store, naming the file it looked for, and creates nothing', async () => {
    const elsewhere = join(mkdtempSync(join(tmpdir(), 'rbs-nostore-')), 'data');
    const out = await terminal(bareEnv({ DATA_DIR: elsewhere }), ['operator', 'create', '--name', 'Lost']);
    expect(out.code).toBe(66);
    expect(out.stdout).toBe('');
    const error = lastJson(out.stderr);
    expect(error.error).toBe('STORE_NOT_FOUND');
    expect(error.message).toContain(`no store at SQLite at ${join(elsewhere, 'service.db')} (DATA_DIR)`);
    expect(error.message).toContain('--init');
    expect(existsSync(elsewhere)).toBe(false);
  }, 120_000);

  it('with --init creates the store and key, says so on stderr, and later runs find them', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rbs-init-'));
    const env = bareEnv({ DATA_DIR: dataDir });
    const created = await terminal(env, ['operator', 'create', '--name', 'First', '--init']);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout).api_key).toMatch(/^pk_/);
    const sqlite = join(dataDir, 'service.db');
    const used = `admin: using SQLite at ${sqlite} (DATA_DIR), master key from ${join(dataDir, 'master.key')}`;
    expect(created.stderr.split('\n')).toContain(used);
    expect(readdirSync(dataDir)).toEqual(expect.arrayContaining(['service.db', 'master.key']));

    const admin = adminCli(env);
    const listed = await admin('operator', 'list');
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).operators.map((o: { name: string }) => o.name)).toEqual(['First']);
  }, 120_000);

  it('refuses an existing store whose master key file is gone (a new key could not open its secrets)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rbs-nokey-'));
    const admin = adminCli(bareEnv({ DATA_DIR: dataDir }));
    expect((await admin('--init', 'operator', 'create', '--name', 'Keyed')).code).toBe(0);
    rmSync(join(dataDir, 'master.key'));
    const refused = await admin('operator', 'list');
    expect(refused).toMatchObject({ code: 66, stdout: '', error: { error: 'STORE_NOT_FOUND' } });
    expect(refused.error?.message).toContain(`no master key file at ${join(dataDir, 'master.key')}`);
    expect(existsSync(join(dataDir, 'master.key'))).toBe(false);
  }, 60_000);

  it('refuses a PostgreSQL schema the service never set up, naming the database without its password', async () => {
    const schema = `t_cli_${randomBytes(5).toString('hex')}`;
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`CREATE SCHEMA ${schema}`);
    try {
      const url = new URL(PG_URL);
      url.password = 'hunter2';
      url.searchParams.set('options', `-c search_path=${schema}`);
      const admin = adminCli(bareEnv({ DATABASE_URL: url.toString(), MASTER_KEY: randomBytes(32).toString('hex') }));
      const refused = await admin('operator', 'list');
      expect(refused).toMatchObject({ code: 66, error: { error: 'STORE_NOT_FOUND' } });
      expect(refused.error?.message).toContain(`no store at PostgreSQL at postgres://${url.username}@${url.hostname}:`);
      expect(refused.error?.message).not.toContain('hunter2');
      const tables = async () =>
        (await c.query('SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1', [schema])).rows[0].n;
      expect(await tables()).toBe(0);

      expect((await admin('--init', 'operator', 'list')).code).toBe(0);
      expect(await tables()).toBeGreaterThan(0);
      expect((await admin('operator', 'list')).code).toBe(0);
    } finally {
      await c.query(`DROP SCHEMA ${schema} CASCADE`);
      await c.end();
    }
  }, 60_000);

  it('run from any directory of the checkout without DATA_DIR, it looks where `npm start` keeps ./data', async () => {
    const out = await terminal(bareEnv(), ['operator', 'list'], join(ROOT, 'test'));
    // Either answer names the checkout's ./data: refused there, or (a developer's service ran) used there.
    expect(out.stderr).toContain(`SQLite at ${join(ROOT, 'data', 'service.db')} (DATA_DIR)`);
  }, 120_000);

  it("the README's first steps: a second terminal with the service's DATA_DIR gets a key it accepts", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rbs-readme-'));
    const port = await freePort();
    // Terminal 1: `npm start` (development mode, the master key file created beside the store).
    const service = spawn('npm', ['start'], {
      cwd: ROOT,
      env: bareEnv({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    children.push(service);
    let logs = '';
    service.stdout?.on('data', (chunk) => {
      logs += String(chunk);
    });
    try {
      await eventually(async () => logs.includes('"service ready"'), 90_000);
      const ready = JSON.parse(logs.split('\n').find((line) => line.includes('"service ready"')) ?? '{}');

      // Terminal 2, the service's DATA_DIR exported as the README's wallet section does.
      const out = await terminal(bareEnv({ DATA_DIR: dataDir }), ['operator', 'create', '--name', 'My Casino']);
      expect(out.code).toBe(0);
      // Both processes name the same store and key, in the same words.
      expect(out.stderr).toContain(`admin: using ${ready.store}`);
      const op = JSON.parse(out.stdout);
      const call = client(`http://127.0.0.1:${port}`, {
        id: op.operator_id,
        apiKey: op.api_key,
        apiSecret: op.api_secret,
      });
      const round = await call('GET', '/api/public/v1/rounds/current');
      expect(round.status).toBe(200);
    } finally {
      // npm start runs the service as its child: the whole group goes.
      if (service.pid) process.kill(-service.pid, 'SIGTERM');
    }
  }, 180_000);
});
