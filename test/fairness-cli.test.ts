import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SqliteDatabase } from '../src/store/sqlite';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

describe('admin fairness commands', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-fair-cli-'));
  const env = {
    ...process.env,
    APP_ENV: 'production',
    DATA_DIR: dataDir,
    MASTER_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'silent',
  };
  const admin = async (...args: string[]) =>
    JSON.parse((await run('npm', ['run', '-s', 'admin', '--', ...args], { cwd: ROOT, env })).stdout);

  it("lists chains and fixes a waiting chain's salt from a contribution, once", async () => {
    expect(await admin('fairness', 'list')).toEqual({ chains: [] });
    // A chain as a production service publishes it: commitment and time, no salt yet.
    const commitment = sha('a terminating seed');
    const db = new SqliteDatabase({ filename: join(dataDir, 'service.db') });
    await db.run(
      `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at)
       VALUES ('chain_cli', 'crash', 10, 'generated', ?, 1)`,
      [commitment],
    );
    await db.close();

    const [waiting] = (await admin('fairness', 'list', '--game', 'crash')).chains;
    expect(waiting).toMatchObject({ chain_id: 'chain_cli', status: 'awaiting_contribution', salt: null });

    const fixed = await admin(
      'fairness',
      'contribute',
      '--chain',
      'chain_cli',
      '--value',
      'audit firm 2026-11-24',
      '--contributor',
      'Audit Firm',
    );
    expect(fixed).toMatchObject({
      chain_id: 'chain_cli',
      status: 'playable',
      contributor: 'Audit Firm',
      contribution: 'audit firm 2026-11-24',
      contribution_automatic: false,
      salt: sha(`${commitment}:audit firm 2026-11-24`),
    });

    await expect(
      run('npm', ['run', '-s', 'admin', '--', 'fairness', 'contribute', '--chain', 'chain_cli', '--value', 'again'], {
        cwd: ROOT,
        env,
      }),
    ).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('"error":"ILLEGAL_TRANSITION"'),
    });
    await expect(
      run('npm', ['run', '-s', 'admin', '--', 'fairness', 'list', '--game', 'poker'], { cwd: ROOT, env }),
    ).rejects.toMatchObject({
      stderr: expect.stringContaining('--game must be crash or stock_race'),
    });
  }, 120_000);
});
