import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/child-service';
import { client, eventually, type TestOperator } from '../support/harness';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const DIST = join(ROOT, 'dist');

/** Every file below `dir`, as paths relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

/**
 * What production runs: `npm run build`, then `node dist/main.js` and `node dist/cli/admin.js` started from
 * another directory, with no TypeScript runner loaded.
 */
describe('the compiled build', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-compiled-'));
  const env = { ...process.env, APP_ENV: 'development', DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  let service: ChildProcess | undefined;
  let output = '';
  let baseUrl = '';

  beforeAll(async () => {
    await run('npm', ['run', '-s', 'build'], { cwd: ROOT, timeout: 240_000 });
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    service = spawn(process.execPath, [join(DIST, 'main.js')], {
      cwd: dataDir,
      env: { ...env, PORT: String(port), NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    service.stdout!.on('data', (d) => (output += d.toString()));
    service.stderr!.on('data', (d) => (output += d.toString()));
    await eventually(
      async () => {
        if (service!.exitCode !== null) throw new Error(`the compiled service exited:\n${output}`);
        const res = await request(`${baseUrl}/healthz`);
        await res.body.text();
        return res.statusCode === 200;
      },
      60_000,
      100,
      'the compiled service answers /healthz',
    );
  }, 300_000);

  afterAll(async () => {
    if (service && service.exitCode === null) {
      const exited = new Promise((r) => service!.once('exit', r));
      service.kill('SIGTERM');
      await exited;
    }
  });

  it('holds every run-time file of src/ at the same relative path', () => {
    const runtimeFiles = filesUnder(join(ROOT, 'src')).filter((f) => !/\.(?:test\.)?ts$/.test(f));
    expect(runtimeFiles).toContain(join('store', 'checkpoint-worker.mjs'));
    expect(runtimeFiles).toContain(join('dashboard', 'static', 'dashboard.css'));
    for (const file of runtimeFiles) expect(existsSync(join(DIST, file)), `dist/${file}`).toBe(true);
    const modules = filesUnder(join(ROOT, 'src'))
      .filter((f) => f.endsWith('.ts') && !/\.(?:test|d)\.ts$/.test(f))
      .map((f) => f.replace(/\.ts$/, '.js'));
    for (const module of modules) expect(existsSync(join(DIST, module)), `dist/${module}`).toBe(true);
  });

  it('serves health, the dashboard assets and a signed call, with the admin CLI compiled too', async () => {
    const health = await request(`${baseUrl}/healthz`);
    expect(health.statusCode).toBe(200);
    expect(await health.body.json()).toEqual({ ok: true });

    const css = await request(`${baseUrl}/dashboard/assets/dashboard.css`);
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect((await css.body.text()).length).toBeGreaterThan(100);

    const created = await run(
      process.execPath,
      [join(DIST, 'cli', 'admin.js'), 'operator', 'create', '--name', 'Compiled'],
      {
        cwd: dataDir,
        env,
        timeout: 60_000,
      },
    );
    const operator = JSON.parse(created.stdout) as { operator_id: string; api_key: string; api_secret: string };
    expect(operator.api_key).toMatch(/^pk_/);
    const signed: TestOperator = { id: operator.operator_id, apiKey: operator.api_key, apiSecret: operator.api_secret };

    const call = client(baseUrl, signed);
    const round = await eventually(async () => {
      const r = await call('GET', '/api/public/v1/rounds/current');
      return r.status === 200 && r;
    }, 30_000);
    expect(round.body.round_number).toBeGreaterThanOrEqual(1);
    expect(['open', 'running', 'closed']).toContain(round.body.status);

    const forged = await client(baseUrl, { ...signed, apiSecret: `sk_${'x'.repeat(43)}` })(
      'GET',
      '/api/public/v1/rounds/current',
    );
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe('INVALID_SIGNATURE');
    expect(output).not.toMatch(/checkpoint thread stopped|Cannot find module|ERR_MODULE_NOT_FOUND/);
  });

  it('needs no TypeScript tooling in production: none of it is in the production dependency tree', async () => {
    const { stdout } = await run('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
      cwd: ROOT,
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const packages = stdout.split('\n').filter(Boolean);
    expect(packages.some((path) => path.endsWith(join('node_modules', 'fastify')))).toBe(true);
    const tooling = packages.filter((path) => /node_modules\/(?:tsx|typescript|esbuild|tsc-alias)$/.test(path));
    expect(tooling).toEqual([]);
    const compiled = filesUnder(DIST).filter((f) => f.endsWith('.js'));
    expect(compiled).toContain('main.js');
  });
});
