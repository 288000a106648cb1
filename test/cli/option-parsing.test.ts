import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { settleIdempotencyKey } from '../../src/wallet/settlements';
import { adminCli, adminProcess, cliEnvOf, type CliOutcome } from '../support/admin-cli';
import { startTestApp, type TestApp, type TestOperator } from '../support/harness';

/**
 * The less-used admin commands as an on-call engineer runs them, against the store of a running service
 * (SQLite: the CLI's option handling does not depend on the store). Option handling runs in this process
 * through the entry point's runner; what only a process shows (stderr, pipes) runs as its own process.
 */
describe('admin CLI edges', () => {
  let t: TestApp;
  let admin: (...args: string[]) => Promise<CliOutcome>;
  let a: TestOperator;
  let b: TestOperator;
  const usage = (message: string): CliOutcome => ({ code: 64, stdout: '', error: { error: 'USAGE', message } });
  /** Runs each argument list, two at a time (the machine has two cores), keeping their order. */
  const each = async (runs: string[][]): Promise<CliOutcome[]> => {
    const out: CliOutcome[] = [];
    for (let i = 0; i < runs.length; i += 2)
      out.push(...(await Promise.all(runs.slice(i, i + 2).map((r) => admin(...r)))));
    return out;
  };
  /** Runs each argument list and checks its outcome, naming the run that differs. */
  const expectEach = async (runs: string[][], expected: (args: string[]) => CliOutcome): Promise<void> => {
    const outcomes = await each(runs);
    runs.forEach((args, i) => expect(outcomes[i], args.join(' ')).toEqual(expected(args)));
  };

  beforeAll(async () => {
    t = await startTestApp({ engines: false });
    admin = adminCli(cliEnvOf(t));
    a = await t.createOperator({ name: 'Alpha' });
    b = await t.createOperator({ name: 'Beta' });
    const now = t.app.services.clock.now();
    await t.app.db.transaction(async (tx) => {
      for (const [operatorId, betId] of [
        [a.id, 'bet_edge_a'],
        [b.id, 'bet_edge_b'],
      ] as const) {
        const body = {
          bet_id: betId,
          winner: 'NVDA',
          pct: 8.85,
          payout: 19,
          idempotency_key: settleIdempotencyKey(betId),
        };
        await settlementRepository.enqueue(tx, { operatorId, body, now, firstDelayMs: 60_000 });
      }
    });
    const users = t.app.services.dashboardUsers;
    await users.createUser({ operatorId: a.id, email: 'alpha@edge.example', password: 'a long passphrase' });
    await users.createUser({ operatorId: b.id, email: 'beta@edge.example', password: 'a long passphrase' });
  });
  afterAll(async () => t?.close());

  it('refuses an option given twice (exit 64) instead of acting on the last one', async () => {
    const [twice, limits] = (await each([
      ['operator', 'disable', '--id', a.id, '--id', b.id],
      ['settlements', 'list', '--limit', '5', '--limit=10'],
    ])) as [CliOutcome, CliOutcome];
    expect(twice).toEqual(usage('--id was given more than once'));
    expect(limits).toEqual(usage('--limit was given more than once'));
    const statuses = (await t.app.services.operators.list()).map((o) => o.status);
    expect(statuses).toEqual(['active', 'active']);
  }, 120_000);

  it('settlements list --limit takes 1 to 1000 (the API bound) and nothing looser, as a usage error', async () => {
    const bad = ['1e3', '10abc', '0x10', '-1', '1001', '5.0'];
    await expectEach(
      bad.map((limit) => ['settlements', 'list', `--limit=${limit}`]),
      () => usage('--limit must be an integer from 1 to 1000'),
    );
    const ok = await admin('settlements', 'list', '--limit', '1000');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout).settlements.map((s: { bet_id: string }) => s.bet_id)).toEqual([
      'bet_edge_a',
      'bet_edge_b',
    ]);
  }, 180_000);

  it('an --operator filter that is empty or names no operator is refused, never read as "all" or "none"', async () => {
    const lists = [
      ['settlements', 'list'],
      ['compliance', 'flags'],
      ['dashboard-user', 'list'],
    ];
    await expectEach(
      lists.map((l) => [...l, '--operator=']),
      () => usage('--operator must not be empty'),
    );
    await expectEach(
      lists.map((l) => [...l, '--operator', 'op_typo']),
      () => ({ code: 1, stdout: '', error: { error: 'NOT_FOUND', message: 'no operator with id op_typo' } }),
    );
    // A real operator sees only its own rows.
    const mine = await each(lists.map((l) => [...l, '--operator', a.id]));
    const [settlements, flags, users] = mine as [CliOutcome, CliOutcome, CliOutcome];
    expect(JSON.parse(settlements.stdout).settlements.map((s: { bet_id: string }) => s.bet_id)).toEqual(['bet_edge_a']);
    expect(JSON.parse(flags.stdout)).toEqual({ flags: [] });
    expect(JSON.parse(users.stdout).users.map((u: { email: string }) => u.email)).toEqual(['alpha@edge.example']);
  }, 180_000);

  it('webhook options given an empty value are refused, not taken as absent, and nothing is written', async () => {
    const added = await t.app.services.webhooks.createEndpoint(a.id, { url: 'https://hooks.edge.example/in' });
    const runs = [
      // Read as absent, this subscribed to every event: the API refuses `events: []`.
      ['webhook', 'add', '--operator', b.id, '--url', 'https://hooks.edge.example/b', '--events='],
      ['webhook', 'update', '--id', added.endpoint_id, '--url=', '--disable'],
      ['webhook', 'update', '--id', added.endpoint_id, '--events=', '--disable'],
      ['webhook', 'deliveries', '--endpoint', added.endpoint_id, '--status='],
      // Read as absent, an unset cursor gave the first page again: a paging loop would never end.
      ['webhook', 'deliveries', '--endpoint', added.endpoint_id, '--starting-after='],
    ];
    await expectEach(runs, (args) => usage(`${args.find((arg) => arg.endsWith('='))?.slice(0, -1)} must not be empty`));
    // Read as absent, an empty overlap took the 24 h default.
    const [limit, overlap] = (await each([
      ['webhook', 'deliveries', '--endpoint', added.endpoint_id, '--limit='],
      ['webhook', 'rotate-secret', '--id', added.endpoint_id, '--overlap-ms='],
    ])) as [CliOutcome, CliOutcome];
    expect(limit).toEqual(usage('--limit must be an integer from 1 to 500'));
    expect(overlap).toEqual(usage('--overlap-ms must be an integer from 0 to 2592000000'));
    expect(await t.app.services.webhooks.listEndpoints(b.id)).toEqual([]);
    const [kept] = await t.app.services.webhooks.listEndpoints(a.id);
    expect(kept).toMatchObject({
      url: 'https://hooks.edge.example/in',
      enabled: true,
      previous_secret_expires_at: null,
    });
  }, 180_000);

  it('operator create --wallet-url= and compliance flags --player= are refused, not read as absent or ""', async () => {
    const before = (await t.app.services.operators.list()).length;
    await expectEach(
      [
        ['operator', 'create', '--name', 'No Wallet', '--wallet-url='],
        // Read as "no such player": an empty list of flags.
        ['compliance', 'flags', '--player='],
      ],
      (args) => usage(`${args.find((arg) => arg.endsWith('='))?.slice(0, -1)} must not be empty`),
    );
    expect(await t.app.services.operators.list()).toHaveLength(before);
  }, 60_000);

  // The wallet alerts of docs/operations.md count live operators only (settlementBacklog skips mode
  // 'test'), but `settlements list --status pending`, the command the same page gives for them, listed
  // sandboxes too, oldest first: a sandbox left in its simulated outage filled the page first.
  it('settlements list --status pending shows what the wallet alerts count: no sandbox rows', async () => {
    const sandbox = await t.createOperator({ name: 'Sandbox', mode: 'test' });
    const now = t.app.services.clock.now();
    await t.app.db.transaction(async (tx) => {
      const body = { bet_id: 'bet_sbx', winner: null, pct: null, payout: 5, idempotency_key: 'settle_bet_sbx' };
      await settlementRepository.enqueue(tx, { operatorId: sandbox.id, body, now: now - 3_600_000, firstDelayMs: 0 });
    });
    const pending = await admin('settlements', 'list', '--status', 'pending', '--limit', '1');
    expect(pending.code).toBe(0);
    expect(JSON.parse(pending.stdout).settlements.map((s: { bet_id: string }) => s.bet_id)).toEqual(['bet_edge_a']);
    // Named, a sandbox's own settlements are listed.
    const own = await admin('settlements', 'list', '--status', 'pending', '--operator', sandbox.id);
    expect(JSON.parse(own.stdout).settlements.map((s: { bet_id: string }) => s.bet_id)).toEqual(['bet_sbx']);
  }, 60_000);

  it('an unknown command ends with the JSON usage error the contract promises, after the command list', async () => {
    const unknown = await admin('webhook', 'frobnicate');
    expect(unknown).toEqual(usage('unknown command "webhook frobnicate": the commands are listed above'));
    const help = await admin('help');
    expect(help).toEqual({ code: 0, stdout: '', error: null });
  }, 60_000);

  // createLogger() wrote to stdout, so a warning came before the CLI's JSON and broke every parse.
  it('keeps log lines off stdout: a warning about stored settings does not break the JSON', async () => {
    const odd = await t.createOperator({ name: 'Odd settings' });
    await t.app.db.transaction((tx) =>
      tx.run('UPDATE operators SET settings = ? WHERE id = ?', ['{"crash":{"max_payout_per_bet":"lots"}}', odd.id]),
    );
    // As an engineer runs it: LOG_LEVEL unset, so the CLI's default (warn) applies.
    const env = cliEnvOf(t);
    delete env.LOG_LEVEL;
    const listed = await adminProcess(env)('operator', 'list');
    expect(listed.code).toBe(0);
    const operators = JSON.parse(listed.stdout).operators as { operator_id: string }[];
    expect(operators.map((o) => o.operator_id)).toContain(odd.id);
  }, 60_000);

  it('prints the whole JSON document however long it is (no cut at the pipe buffer on exit)', async () => {
    // About 1 MB of JSON (adminCli's buffer holds 1 MiB): far more than a pipe holds, so an exit before
    // the pipe drains loses the tail.
    for (let i = 0; i < 900; i++) await t.app.services.operators.create({ name: `Bulk ${i}`, walletUrl: null });
    const stored = (await t.app.services.operators.list()).length;
    const listed = await adminProcess(cliEnvOf(t))('operator', 'list');
    expect(listed.code).toBe(0);
    expect(listed.stdout.length).toBeGreaterThan(900_000);
    expect(JSON.parse(listed.stdout).operators).toHaveLength(stored);
  }, 60_000);

  it('stops quietly when the reader goes away (`| head`): no EPIPE stack trace on stderr', async () => {
    const env = cliEnvOf(t);
    // The operator list is over 900 kB by now (the test above): far more than `head` reads.
    const piped = await promisify(execFile)('bash', ['-c', 'npm run -s admin -- operator list | head -c 100'], {
      cwd: resolve(import.meta.dirname, '..', '..'),
      env,
    });
    expect(piped.stdout).toHaveLength(100);
    // The line naming the store it acts on, and nothing else.
    expect(piped.stderr).toBe(
      `admin: using SQLite at ${env.DATA_DIR}/service.db (DATA_DIR), master key from MASTER_KEY\n`,
    );
  }, 60_000);
});
