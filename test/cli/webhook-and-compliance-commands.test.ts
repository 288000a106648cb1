import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complianceCommands } from '../../src/cli/commands/compliance';
import { webhookCommands } from '../../src/cli/commands/webhook';
import { parseCommand, UsageError } from '../../src/cli/cli-kit';
import { client, eventually, startTestApp, type TestApp } from '../support/harness';
import { TestReceiver } from '../support/webhook-receiver';
import { adminCli, initStore } from '../support/admin-cli';

/**
 * The admin commands' logic, run in-process against a live service (the CLI as its own process:
 * test/cli/admin-commands.test.ts and test/cli/option-parsing.test.ts).
 */
describe('webhook and compliance admin commands', () => {
  let t: TestApp;
  const receiver = new TestReceiver();
  let base = '';
  const cli = async (group: string, name: string, ...argv: string[]): Promise<any> => {
    const command = [...webhookCommands, ...complianceCommands].find((c) => c.path[0] === group && c.path[1] === name)!;
    return command.run(t.app, parseCommand(command, argv));
  };

  beforeAll(async () => {
    base = await receiver.start();
    t = await startTestApp({
      env: { WEBHOOK_RETRY_SCHEDULE_MS: '0,20,20,20,20', OUTBOX_POLL_MS: '20' },
      engines: true,
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  it('adds, rotates, lists dead letters, re-sends and deletes', async () => {
    const op = await t.createOperator();
    const added = await cli(
      'webhook',
      'add',
      '--operator',
      op.id,
      '--url',
      `${base}/cli`,
      '--events',
      'compliance.flag,bet.settled',
      '--surface',
      'B',
    );
    expect(added).toMatchObject({
      operator_id: op.id,
      surface: 'B',
      events: ['bet.settled', 'compliance.flag'],
      enabled: true,
    });
    expect(added.secret).toMatch(/^whsec_/);
    await expect(
      cli('webhook', 'add', '--operator', op.id, '--url', `${base}/x`, '--events', 'round.started'),
    ).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });

    const rotated = await cli('webhook', 'rotate-secret', '--id', added.endpoint_id, '--overlap-ms', '0');
    expect(rotated.secret).not.toBe(added.secret);
    expect(rotated.previous_secret_expires_at).toBeNull();

    receiver.behaviour = (req) => (req.path === '/cli' ? { status: 500, body: 'nope' } : { status: 200 });
    const test = await cli('webhook', 'test', '--id', added.endpoint_id);
    await eventually(async () => (await cli('webhook', 'delivery', '--id', test.delivery_id)).status === 'dead');
    const dead = await cli('webhook', 'deliveries', '--endpoint', added.endpoint_id, '--status', 'dead');
    expect(dead.deliveries).toEqual([
      expect.objectContaining({ delivery_id: test.delivery_id, attempts: 5, last_status_code: 500 }),
    ]);
    const detail = await cli('webhook', 'delivery', '--id', test.delivery_id);
    expect(
      detail.attempt_log.map((a: { attempt: number; response_excerpt: string }) => [a.attempt, a.response_excerpt]),
    ).toEqual([
      [1, 'nope'],
      [2, 'nope'],
      [3, 'nope'],
      [4, 'nope'],
      [5, 'nope'],
    ]);

    receiver.behaviour = () => ({ status: 200 });
    const resent = await cli('webhook', 'resend', '--delivery', test.delivery_id);
    expect(resent).toMatchObject({ resend_of: test.delivery_id, status: 'pending' });
    await eventually(async () => (await cli('webhook', 'delivery', '--id', resent.delivery_id)).status === 'delivered');

    const disabled = await cli('webhook', 'update', '--id', added.endpoint_id, '--disable');
    expect(disabled.enabled).toBe(false);
    await expect(cli('webhook', 'test', '--id', added.endpoint_id)).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
    });
    expect(await cli('webhook', 'delete', '--id', added.endpoint_id)).toEqual({
      endpoint_id: added.endpoint_id,
      deleted: true,
    });
    expect((await cli('webhook', 'list', '--operator', op.id)).endpoints).toEqual([]);
  });

  it('lists compliance flags raised by real bets', async () => {
    const op = await t.createOperator();
    await t.app.services.operators.updateSettings(op.id, { compliance: { large_stake: 10 } as never });
    const call = client(t.baseUrl, op);
    await eventually(async () => {
      const r = await call(
        'POST',
        '/api/public/v1/place-bet',
        { external_user_id: 'whale', amount: 10 },
        { idempotencyKey: `k-${Math.random()}` },
      );
      return r.status === 200;
    }, 20_000);
    const out = await cli('compliance', 'flags', '--operator', op.id, '--rule', 'large_stake');
    expect(out.flags).toEqual([
      expect.objectContaining({
        operator_id: op.id,
        rule: 'large_stake',
        player: 'whale',
        details: { amount: 10, threshold: 10 },
      }),
    ]);
  });
  it('refuses conflicting or out-of-range options as usage errors, changing nothing', async () => {
    const op = await t.createOperator();
    const added = await cli('webhook', 'add', '--operator', op.id, '--url', `${base}/usage`);
    const usage = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: unknown) => e,
      );
    const both = await usage(cli('webhook', 'update', '--id', added.endpoint_id, '--enable', '--disable'));
    expect(both).toBeInstanceOf(UsageError);
    expect((both as Error).message).toBe('give --enable or --disable, not both');
    for (const limit of ['0', '501', '100000000', '-1', 'x']) {
      const refused = await usage(cli('webhook', 'deliveries', '--endpoint', added.endpoint_id, `--limit=${limit}`));
      expect(refused, limit).toBeInstanceOf(UsageError);
      expect((refused as Error).message).toBe('--limit must be an integer from 1 to 500');
    }
    const overlap = await usage(
      cli('webhook', 'rotate-secret', '--id', added.endpoint_id, '--overlap-ms', '9'.repeat(12)),
    );
    expect((overlap as Error).message).toBe('--overlap-ms must be an integer from 0 to 2592000000');
    const [endpoint] = (await cli('webhook', 'list', '--operator', op.id)).endpoints;
    expect(endpoint).toMatchObject({ endpoint_id: added.endpoint_id, enabled: true });
    expect(await cli('webhook', 'deliveries', '--endpoint', added.endpoint_id, '--limit', '500')).toEqual({
      deliveries: [],
    });
  });
});

describe('webhook and compliance admin commands, as an operator runs them', () => {
  const env = {
    ...process.env,
    DATA_DIR: mkdtempSync(join(tmpdir(), 'rbs-webhook-cli-')),
    MASTER_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'silent',
  };
  const admin = adminCli(env);
  beforeAll(() => initStore(env));

  it('webhook list for an unknown operator is the NOT_FOUND that webhook add gives', async () => {
    const add = await admin('webhook', 'add', '--operator', 'op_nope', '--url', 'https://hooks.example.com/in');
    expect(add).toEqual({
      code: 1,
      stdout: '',
      error: { error: 'NOT_FOUND', message: 'no operator with id op_nope' },
    });
    expect(await admin('webhook', 'list', '--operator', 'op_nope')).toEqual(add);
    const op = JSON.parse((await admin('operator', 'create', '--name', 'Hooked')).stdout);
    const listed = await admin('webhook', 'list', '--operator', op.operator_id);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual({ endpoints: [] });
  }, 120_000);

  it('compliance flags --limit takes 1 to 1000 (as the HTTP API does); anything else is a usage error', async () => {
    for (const limit of ['100000000', '1001', '0', '-5', '1.5', 'ten', '']) {
      expect(await admin('compliance', 'flags', `--limit=${limit}`), limit).toEqual({
        code: 64,
        stdout: '',
        error: { error: 'USAGE', message: '--limit must be an integer from 1 to 1000' },
      });
    }
    for (const limit of ['1', '1000']) {
      const ok = await admin('compliance', 'flags', '--limit', limit);
      expect(ok.code, limit).toBe(0);
      expect(JSON.parse(ok.stdout), limit).toEqual({ flags: [] });
    }
  }, 180_000);
});

describe('target URL checks at the API', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' }, engines: false });
  });
  afterAll(async () => t?.close());

  it('refuses non-https and private targets when the development setting is off', async () => {
    const call = client(t.baseUrl, await t.createOperator());
    const plain = await call('POST', '/api/public/v1/webhook-endpoints', { url: 'http://hooks.example.com/in' });
    expect(plain.status).toBe(400);
    expect(plain.body).toEqual({ error: 'the URL must use https', code: 'INVALID_URL' });
    const inward = await call('POST', '/api/public/v1/webhook-endpoints', { url: 'https://192.168.0.10/in' });
    expect(inward.body).toEqual({
      error: '192.168.0.10 is a loopback, private or link-local address',
      code: 'INVALID_URL',
    });
  });
});
