/**
 * What a platform engineer sees when running the service (README, docs/deployment.md,
 * docs/operations.md): a bad environment value stops the boot with exit 78 and a message naming the
 * variable, a good one is not refused, and GET /metrics answers the scrape config the docs describe.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type Env } from '../../src/config/config';
import { adminCli } from '../support/admin-cli';
import { startTestApp } from '../support/harness';
import { parsePrometheusText } from '../support/prometheus-text';

const ROOT = resolve(import.meta.dirname, '..', '..');
const execFileAsync = promisify(execFile);

const testEnv = (extra: Env = {}): Env => ({ APP_ENV: 'test', MASTER_KEY: randomBytes(32).toString('hex'), ...extra });

/** The ConfigError message loadConfig stops the boot with, or null when it accepts the environment. */
const refusal = (env: Env): string | null => {
  try {
    loadConfig(env);
    return null;
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
};

/** Starts the real entry point (src/main.ts) as `npm start` does and returns how it ended when it refuses. */
async function bootRefusal(env: Env): Promise<{ code: number; stderr: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-ops-edges-'));
  const childEnv = { PATH: process.env.PATH, APP_ENV: 'test', PORT: '0', DATA_DIR: dataDir, ...env };
  try {
    await execFileAsync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: childEnv as NodeJS.ProcessEnv,
      timeout: 20_000,
    });
    return { code: 0, stderr: '' };
  } catch (error) {
    const failed = error as { code: number | null; stderr: string; killed?: boolean };
    if (failed.killed) throw new Error('the service started instead of refusing its configuration');
    return { code: failed.code ?? -1, stderr: failed.stderr };
  }
}

describe('a bad value stops the boot with exit 78 and names the variable', () => {
  it('LOG_LEVEL outside fatal|error|warn|info|debug|trace|silent is refused by loadConfig', () => {
    expect(refusal(testEnv({ LOG_LEVEL: 'verbose' }))).toMatch(/^LOG_LEVEL must be one of fatal, error, warn/);
    // Upper case is the same level to an engineer; pino knows only lower case.
    expect(loadConfig(testEnv({ LOG_LEVEL: 'DEBUG' })).logLevel).toBe('debug');
  });

  it('MASTER_KEY that is not 32 bytes in hex or base64 is refused by loadConfig', () => {
    expect(refusal(testEnv({ MASTER_KEY: 'not-a-key' }))).toMatch(/^MASTER_KEY must decode to 32 bytes/);
    expect(refusal(testEnv({ MASTER_KEY: 'ab'.repeat(31) }))).toMatch(/^MASTER_KEY/);
    expect(refusal(testEnv({ MASTER_KEY: randomBytes(32).toString('hex') }))).toBeNull();
    expect(refusal(testEnv({ MASTER_KEY: randomBytes(32).toString('base64') }))).toBeNull();
    // A key file or secret mount often ends with a newline.
    expect(refusal(testEnv({ MASTER_KEY: `${randomBytes(32).toString('hex')}\n` }))).toBeNull();
  });

  it.each([
    ['LOG_LEVEL', { LOG_LEVEL: 'verbose' }],
    ['MASTER_KEY', { MASTER_KEY: 'not-a-key' }],
  ])('the service process exits 78 with "configuration error: %s …", no stack trace', async (name, env) => {
    const { code, stderr } = await bootRefusal(env);
    expect(code).toBe(78);
    expect(stderr.trim()).toMatch(new RegExp(`^configuration error: ${name} `));
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('the admin CLI reports a bad LOG_LEVEL or MASTER_KEY as CONFIG, exit 78 (docs/operations.md)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rbs-ops-edges-cli-'));
    for (const bad of [{ LOG_LEVEL: 'verbose' }, { MASTER_KEY: 'not-a-key' }]) {
      const run = adminCli({ DATA_DIR: dataDir, MASTER_KEY: randomBytes(32).toString('hex'), ...bad });
      const outcome = await run('operator', 'list');
      expect(outcome.code).toBe(78);
      expect(outcome.error?.error).toBe('CONFIG');
      expect(outcome.error?.message).toMatch(new RegExp(`^${Object.keys(bad)[0]} `));
    }
  });

  it('PUBLIC_BASE_URL without http:// or https:// is refused (launch URLs would be unusable)', () => {
    expect(refusal(testEnv({ PUBLIC_BASE_URL: 'bets.example.com:443' }))).toMatch(
      /^PUBLIC_BASE_URL must be an absolute http:\/\/ or https:\/\/ URL/,
    );
    expect(refusal(testEnv({ PUBLIC_BASE_URL: 'ftp://bets.example.com' }))).toMatch(/^PUBLIC_BASE_URL/);
    expect(loadConfig(testEnv({ PUBLIC_BASE_URL: 'https://bets.example.com/' })).publicBaseUrl).toBe(
      'https://bets.example.com',
    );
  });

  it('an empty retry schedule (",") is refused rather than retrying a wallet in a loop or crashing at start', () => {
    expect(refusal(testEnv({ WALLET_RETRY_SCHEDULE_MS: ',' }))).toMatch(/^WALLET_RETRY_SCHEDULE_MS/);
    expect(refusal(testEnv({ WEBHOOK_RETRY_SCHEDULE_MS: ' , ' }))).toMatch(/^WEBHOOK_RETRY_SCHEDULE_MS/);
  });

  it('a delay longer than a Node timer can wait is refused (it would fire at once, e.g. exit 1 on SIGTERM)', () => {
    // Node runs a timer of more than 2^31 - 1 ms after 1 ms: the shutdown's force-exit would kill the drain.
    expect(refusal(testEnv({ SHUTDOWN_GRACE_MS: '3000000000' }))).toMatch(/^SHUTDOWN_GRACE_MS must be between/);
    expect(refusal(testEnv({ OUTBOX_POLL_MS: '3000000000' }))).toMatch(/^OUTBOX_POLL_MS must be between/);
    expect(refusal(testEnv({ SHUTDOWN_GRACE_MS: '2147483647' }))).toBeNull();
  });
});

describe('a good value is not refused', () => {
  it('HOST=:: (every interface, IPv6) starts, with a default PUBLIC_BASE_URL that is a URL', () => {
    expect(refusal(testEnv({ HOST: '::' }))).toBeNull();
    expect(loadConfig(testEnv({ HOST: '::' })).publicBaseUrl).toBe('http://[::1]:3000');
    expect(loadConfig(testEnv({ HOST: '::1', PORT: '8080' })).publicBaseUrl).toBe('http://[::1]:8080');
    expect(loadConfig(testEnv({ HOST: '0.0.0.0' })).publicBaseUrl).toBe('http://127.0.0.1:3000');
  });
});

describe('GET /metrics with METRICS_TOKEN (docs/operations.md)', () => {
  it('a token read from a secret file with its trailing newline still lets Prometheus scrape', async () => {
    const t = await startTestApp({ engines: false, env: { METRICS_TOKEN: 'scrape-token\n' } });
    try {
      const scrape = await request(`${t.baseUrl}/metrics`, { headers: { authorization: 'Bearer scrape-token' } });
      const text = await scrape.body.text();
      expect(scrape.statusCode).toBe(200);
      expect(parsePrometheusText(text).types.get('rbs_bets_placed_total')).toBe('counter');
      const anonymous = await request(`${t.baseUrl}/metrics`);
      await anonymous.body.text();
      expect(anonymous.statusCode).toBe(401);
    } finally {
      await t.close();
    }
  });

  it('a token with whitespace inside, which no Authorization header can carry, is refused at start', () => {
    expect(refusal(testEnv({ METRICS_TOKEN: 'two words' }))).toMatch(/^METRICS_TOKEN/);
  });
});
