import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SqliteDatabase } from '../../src/store/sqlite';
import { adminCli, adminJson, initStore } from '../support/admin-cli';

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
  const admin = adminJson(env);
  const outcome = adminCli(env);
  beforeAll(() => initStore(env));
  /** A chain as a production service publishes it: commitment and time, no salt yet. */
  const publishWaitingChain = async (chainId: string, game: string, commitment: string, committedAt: number) => {
    const db = new SqliteDatabase({ filename: join(dataDir, 'service.db') });
    await db.run(
      `INSERT INTO fair_chain_records (chain_id, game, length, origin, commitment, committed_at)
       VALUES (?, ?, 10, 'generated', ?, ?)`,
      [chainId, game, commitment, committedAt],
    );
    await db.close();
  };

  it("lists chains and fixes a waiting chain's salt from a contribution, once", async () => {
    expect(await admin('fairness', 'list')).toEqual({ chains: [] });
    const commitment = sha('a terminating seed');
    await publishWaitingChain('chain_cli', 'crash', commitment, 1);

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

    expect(await outcome('fairness', 'contribute', '--chain', 'chain_cli', '--value', 'again')).toMatchObject({
      code: 1,
      error: { error: 'ILLEGAL_TRANSITION' },
    });
    expect(await outcome('fairness', 'list', '--game', 'poker')).toMatchObject({
      code: 1,
      error: { error: 'VALIDATION_FAILED', message: '--game must be crash or stock_race' },
    });
  }, 120_000);

  // Read as absent, `--game=` listed both games and `--contributor=` credited the contribution to "admin CLI".
  it('refuses empty --game and --contributor as usage errors, changing nothing', async () => {
    await publishWaitingChain('chain_empty', 'stock_race', sha('another terminating seed'), 2);
    const usage = (message: string) => ({ code: 64, stdout: '', error: { error: 'USAGE', message } });
    expect(await outcome('fairness', 'list', '--game=')).toEqual(usage('--game must not be empty'));
    const anonymous = await outcome(
      'fairness',
      'contribute',
      '--chain',
      'chain_empty',
      '--value',
      'v',
      '--contributor=',
    );
    expect(anonymous).toEqual(usage('--contributor must not be empty'));
    const [still] = (await admin('fairness', 'list', '--game', 'stock_race')).chains;
    expect(still).toMatchObject({ chain_id: 'chain_empty', status: 'awaiting_contribution', salt: null });
  }, 120_000);
});
