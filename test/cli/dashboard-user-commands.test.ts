import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminCli, adminJson, initStore } from '../support/admin-cli';

describe('admin CLI: dashboard-user', () => {
  const env = {
    ...process.env,
    DATA_DIR: mkdtempSync(join(tmpdir(), 'rbs-cli-')),
    MASTER_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'silent',
  };
  const admin = adminJson(env);
  const outcome = adminCli(env);
  beforeAll(() => initStore(env));

  it('creates, lists and deletes dashboard users, printing one JSON object each time', async () => {
    const op = await admin('operator', 'create', '--name', 'Casino Two');
    const user = await admin(
      'dashboard-user',
      'create',
      '--operator',
      op.operator_id,
      '--email',
      'Ops@Casino.test',
      '--password',
      'a long passphrase',
    );
    expect(Object.keys(user).sort()).toEqual(['created_at', 'email', 'operator_id', 'user_id']);
    expect(user).toMatchObject({ operator_id: op.operator_id, email: 'ops@casino.test' });
    expect(user.user_id).toMatch(/^du_/);
    expect(await admin('dashboard-user', 'list', '--operator', op.operator_id)).toEqual({ users: [user] });
    const short = await outcome(
      'dashboard-user',
      'create',
      '--operator',
      op.operator_id,
      '--email',
      'x@casino.test',
      '--password',
      'short',
    );
    expect(short).toMatchObject({ code: 1, stdout: '', error: { error: 'VALIDATION_FAILED' } });
    const orphan = await outcome(
      'dashboard-user',
      'create',
      '--operator',
      'op_missing',
      '--email',
      'x@casino.test',
      '--password',
      'a long passphrase',
    );
    expect(orphan).toMatchObject({ code: 1, stdout: '', error: { error: 'NOT_FOUND' } });
    expect(await admin('dashboard-user', 'delete', '--email', 'ops@casino.test')).toEqual({ deleted: user });
    expect(await admin('dashboard-user', 'list')).toEqual({ users: [] });
  }, 180_000);
});
