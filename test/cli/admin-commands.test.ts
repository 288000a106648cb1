import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { adminCli, adminJson } from '../support/admin-cli';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');

/** The admin CLI is a contract outside scripts rely on: exactly one JSON object on stdout. */
describe('admin CLI', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-cli-'));
  const env = { ...process.env, DATA_DIR: dataDir, MASTER_KEY: randomBytes(32).toString('hex'), LOG_LEVEL: 'silent' };
  /** The CLI as scripts run it, its own process through `npm run -s admin`. */
  const spawned = async (...args: string[]) => {
    const { stdout } = await run('npm', ['run', '-s', 'admin', '--', ...args], { cwd: ROOT, env });
    return JSON.parse(stdout);
  };
  /** The same runner in this process, for the option and validation cases (a Node start each is seconds). */
  const admin = adminJson(env);
  /** A refused command as an operator sees it: exit code, stdout, and the JSON error on stderr's last line. */
  const refused = adminCli(env);

  it('creates, lists, rotates, disables operators, printing one JSON object each time', async () => {
    // The first command on a new DATA_DIR: --init creates its store.
    const created = await spawned(
      '--init',
      'operator',
      'create',
      '--name',
      'Casino One',
      '--wallet-url',
      'https://wallet.casino.test/api',
    );
    expect(created).toMatchObject({
      name: 'Casino One',
      wallet_url: 'https://wallet.casino.test/api',
      status: 'active',
    });
    expect(created.operator_id).toMatch(/^op_/);
    expect(created.api_key).toMatch(/^pk_/);
    expect(created.api_secret).toMatch(/^sk_/);

    const listed = await admin('operator', 'list');
    expect(listed.operators).toHaveLength(1);
    expect(listed.operators[0].api_key).toBe(created.api_key);
    expect(JSON.stringify(listed)).not.toContain(created.api_secret);

    const rotated = await admin('operator', 'rotate-secret', '--id', created.operator_id, '--overlap-ms', '60000');
    expect(rotated.api_secret).toMatch(/^sk_/);
    expect(rotated.api_secret).not.toBe(created.api_secret);
    expect(rotated.previous_secret_expires_at).toBeGreaterThan(Date.now());

    const disabled = await admin('operator', 'disable', '--id', created.operator_id);
    expect(disabled.status).toBe('disabled');

    // Secrets are sealed with the master key: the database files alone do not contain them.
    for (const file of readdirSync(dataDir).filter((f) => f.startsWith('service.db'))) {
      const bytes = readFileSync(join(dataDir, file));
      expect(bytes.includes(Buffer.from(created.api_secret))).toBe(false);
      expect(bytes.includes(Buffer.from(rotated.api_secret))).toBe(false);
    }
  }, 120_000);

  it('fails with a JSON error and a non-zero exit for bad input', async () => {
    await expect(
      run('npm', ['run', '-s', 'admin', '--', 'operator', 'create'], { cwd: ROOT, env }),
    ).rejects.toMatchObject({
      code: 64,
      stderr: expect.stringContaining('--name is required'),
    });
    expect(await refused('operator', 'disable', '--id', 'op_missing')).toEqual({
      code: 1,
      stdout: '',
      error: { error: 'NOT_FOUND', message: 'no operator with id op_missing' },
    });
  }, 120_000);

  it('set-wallet refuses --url with --clear as a usage error (exit 64) and keeps the wallet', async () => {
    const op = await admin('operator', 'create', '--name', 'Wallet Keeper', '--wallet-url', 'https://wallet.keep.test');
    const both = await refused(
      'operator',
      'set-wallet',
      '--id',
      op.operator_id,
      '--url',
      'https://example.com',
      '--clear',
    );
    expect(both).toEqual({
      code: 64,
      stdout: '',
      error: { error: 'USAGE', message: 'give either --url or --clear, not both' },
    });
    const neither = await refused('operator', 'set-wallet', '--id', op.operator_id);
    expect(neither).toMatchObject({ code: 64, stdout: '', error: { error: 'USAGE' } });
    const listed = await admin('operator', 'list');
    const kept = listed.operators.find((o: { operator_id: string }) => o.operator_id === op.operator_id);
    expect(kept.wallet_url).toBe('https://wallet.keep.test');
  }, 120_000);

  it('rotate-secret refuses an overlap that is not an integer of at most 30 days as a usage error', async () => {
    const op = await admin('operator', 'create', '--name', 'Overlap Checker');
    // A non-number, and a number whose expiry no date can hold: both exit 64 and the secret stays.
    for (const overlap of ['abc', '9007199254740991']) {
      const answer = await refused('operator', 'rotate-secret', '--id', op.operator_id, '--overlap-ms', overlap);
      expect(answer, overlap).toEqual({
        code: 64,
        stdout: '',
        error: { error: 'USAGE', message: '--overlap-ms must be an integer from 0 to 2592000000' },
      });
    }
    const rotated = await admin('operator', 'rotate-secret', '--id', op.operator_id, '--overlap-ms', '2592000000');
    expect(rotated.previous_secret_expires_at).toBeGreaterThan(Date.now() + 2_591_000_000);
  }, 120_000);

  it('create refuses an empty name, one over 100 characters or with control characters, creating nothing', async () => {
    const before = (await admin('operator', 'list')).operators.length;
    const bad: [string, RegExp][] = [
      ['x'.repeat(5000), /name must be at most 100 characters/],
      ['y'.repeat(101), /name must be at most 100 characters/],
      ['   ', /name must not be empty/],
      ['two\nlines', /name must not contain control characters/],
      ['bell\u0007', /name must not contain control characters/],
      ['csi\u009b31m', /name must not contain control characters/],
    ];
    for (const [name, message] of bad) {
      const r = await refused('operator', 'create', '--name', name);
      expect(r, JSON.stringify(name)).toMatchObject({ code: 1, stdout: '', error: { error: 'VALIDATION_FAILED' } });
      expect(r.error?.message, JSON.stringify(name)).toMatch(message);
    }
    expect((await admin('operator', 'list')).operators).toHaveLength(before);
    // The bound is on characters after trimming, not UTF-16 units: 100 emoji are a valid name.
    const longest = await admin('operator', 'create', '--name', ` ${'\u{1F3B2}'.repeat(100)} `);
    expect(longest.name).toBe('\u{1F3B2}'.repeat(100));
  }, 180_000);
});
