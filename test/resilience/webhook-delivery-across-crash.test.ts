import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminJson, initStore } from '../support/admin-cli';
import { eventually } from '../support/harness';
import { TestReceiver } from '../support/webhook-receiver';

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * The real service as a child process on its own DATA_DIR: killed with SIGKILL while a receiver
 * is holding a delivery open, then restarted on the same store, which must deliver it.
 */
describe('webhook delivery across a crash (SQLite, real process)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'rbs-restart-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    APP_ENV: 'development',
    DATA_DIR: dataDir,
    DATABASE_URL: '',
    MASTER_KEY: randomBytes(32).toString('hex'),
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    WEBHOOK_RETRY_SCHEDULE_MS: '0,50,100,150,200',
    WEBHOOK_TIMEOUT_MS: '20000',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    OUTBOX_POLL_MS: '20',
    CRASH_BETTING_WINDOW_MS: '2000',
    STOCK_RACE_BETTING_WINDOW_MS: '2000',
  };
  const receiver = new TestReceiver();
  const children: ChildProcess[] = [];
  let base = '';

  // The CLI's runner in this process, on the service's store (the CLI as its own process:
  // test/cli/admin-commands.test.ts).
  const admin = adminJson(env);

  const startService = (): ChildProcess => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(child);
    return child;
  };

  beforeAll(async () => {
    await initStore(env);
    base = await receiver.start();
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('delivers after a restart what was in flight when the process was killed', async () => {
    const url = `${base}/restart`;
    let stalling = true;
    receiver.behaviour = () => (stalling ? 'stall' : { status: 200, body: 'ok' });

    const op = await admin('operator', 'create', '--name', 'Restart test');
    const ep = await admin('webhook', 'add', '--operator', op.operator_id, '--url', url, '--events', 'round.opened');
    expect(ep).toMatchObject({
      endpoint_id: expect.stringMatching(/^we_/),
      secret: expect.stringMatching(/^whsec_/),
      surface: 'A',
      events: ['round.opened'],
    });
    expect((await admin('webhook', 'list', '--operator', op.operator_id)).endpoints).toHaveLength(1);

    const first = startService();
    const held = await eventually(async () => receiver.on('/restart')[0], 30_000);
    const deliveryId = String(held.headers['x-delivery-id']);
    expect(held.headers['x-delivery-attempt']).toBe('1');
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));

    stalling = false;
    const second = startService();
    const redelivered = await eventually(
      async () => receiver.received.find((r) => r.headers['x-delivery-id'] === deliveryId && r.answered === 200),
      30_000,
    );
    expect(redelivered.headers['x-delivery-attempt']).toBe('2');
    expect(redelivered.body).toBe(held.body);

    const detail = await eventually(async () => {
      const d = await admin('webhook', 'delivery', '--id', deliveryId);
      return d.status === 'delivered' ? d : undefined;
    }, 30_000);
    expect(detail.attempts).toBe(2);
    expect(detail.attempt_log).toMatchObject([
      { attempt: 1, status_code: null, error: 'outcome unknown: the worker stopped before it recorded the answer' },
      { attempt: 2, status_code: 200 },
    ]);
    second.kill('SIGTERM');
    await new Promise((r) => second.once('exit', r));
  }, 120_000);
});
