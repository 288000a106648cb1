import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { loadConfig } from '../../src/config/config';
import { OperatorModes } from '../../src/operators/operator-mode';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import type { Database } from '../../src/store/database';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { settleIdempotencyKey } from '../../src/wallet/settlements';
import { WalletSettlementWorker } from '../../src/wallet/wallet-worker';
import { recordEvents } from '../../src/webhooks/events';
import { WebhookService } from '../../src/webhooks/service';
import { freshDatabase } from '../support/harness';
import { guardSockets, type SocketGuard } from '../support/socket-guard';
import { betSettled } from '../support/webhook-events';

/**
 * DNS rebinding: a name that resolved to a public address when the URL was registered answers with
 * a private one when the call is made. The address must be judged where the socket gets it.
 *
 * The resolver is injected (there is no DNS here). The public answer is only ever used by the
 * registration check, which does not connect; every connect-time answer is a local address, where
 * a server is listening, so a missing check would show up as a request that reached it. A socket
 * guard stops any socket that does not go through an address lookup of its own, and any lookup
 * answer that is not loopback, so nothing leaves the machine whatever the code under test does.
 */
describe('SSRF: DNS rebinding is caught at connect time', () => {
  const modes = new OperatorModes();
  let db: Database;
  let dispose: () => Promise<void>;
  let server: Server;
  let port = 0;
  let reached: string[];
  const answers = new Map<string, string[]>();
  const lookups: string[] = [];
  const resolveName = async (host: string) => {
    lookups.push(host);
    const hit = answers.get(host);
    if (!hit) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return hit;
  };
  const box = new SecretBox(randomBytes(32));
  const config = loadConfig(
    {
      APP_ENV: 'production',
      MASTER_KEY: randomBytes(32).toString('hex'),
      LOG_LEVEL: 'silent',
      WEBHOOK_TIMEOUT_MS: '3000',
    },
    { serving: false },
  );

  beforeAll(async () => {
    ({ db, dispose } = await freshDatabase('sqlite'));
    server = createServer((req, res) => {
      reached.push(req.url ?? '');
      req.resume();
      req.on('end', () => res.writeHead(200).end('ok'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await dispose();
  });
  let guard: SocketGuard;
  beforeEach(() => {
    reached = [];
    lookups.length = 0;
    guard = guardSockets((options) => typeof options.lookup === 'function');
  });
  afterEach(() => guard.restore());

  it.each([['127.0.0.1'], ['::ffff:7f00:1'], ['169.254.169.254']])(
    'webhooks: a registered endpoint whose name now resolves to %s gets no request',
    async (inward) => {
      const host = `hooks-${randomBytes(4).toString('hex')}.example.com`;
      const clock = new FakeClock(Date.now());
      const operators = new OperatorService(db, box, clock, 0, { allowPrivateTargets: false, resolve: resolveName });
      const logger = pino({ level: 'silent' });
      const webhooks = new WebhookService({ db, box, clock, logger, operators, config, resolve: resolveName });
      const op = await operators.create({ name: 'Rebinder' });

      answers.set(host, ['93.184.216.34']);
      const url = `https://${host}:${port}/in`;
      const endpoint = await webhooks.createEndpoint(op.id, { url, events: ['bet.settled'] });
      expect(endpoint.url).toBe(`https://${host}:${port}/in`);

      answers.set(host, [inward]);
      lookups.length = 0;
      const event = betSettled(op.id, { id: 'b1' });
      await db.transaction((tx) => recordEvents(tx, modes, [event], clock.now()));
      try {
        await webhooks.dispatcher.drain();
      } finally {
        await webhooks.dispatcher.stop();
      }
      expect(lookups).toContain(host);
      const attempts = await db.all<{ error: string; status_code: number | null }>(
        `SELECT a.error, a.status_code FROM webhook_attempts a
         JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.operator_id = ?`,
        [op.id],
      );
      expect(attempts).toEqual([
        {
          status_code: null,
          error: `ENOTPUBLIC: refusing to connect: ${host} resolves to ${inward}, not a public address`,
        },
      ]);
      const deliveries = await db.all('SELECT status, delivered_at FROM webhook_deliveries WHERE operator_id = ?', [
        op.id,
      ]);
      expect(deliveries).toEqual([{ status: 'pending', delivered_at: null }]);
      expect(reached).toEqual([]);
      expect(guard.stopped).toEqual([]);
    },
  );

  it('wallet settle calls: a wallet_url now resolving inward gets no request, settlement stays pending', async () => {
    const host = 'wallet.casino.example';
    const clock = new FakeClock(1_800_000_000_000);
    const operators = new OperatorService(db, box, clock, 0, { allowPrivateTargets: false, resolve: resolveName });

    answers.set(host, ['93.184.216.34']);
    const op = await operators.create({ name: 'Wallet rebinder', walletUrl: `https://${host}:${port}/wallet` });
    expect(op.walletUrl).toBe(`https://${host}:${port}/wallet`);

    answers.set(host, ['127.0.0.1', '::1']);
    lookups.length = 0;
    const worker = new WalletSettlementWorker({
      db,
      clock,
      logger: pino({ level: 'silent' }),
      credentialsOf: (id) => operators.credentialsById(id),
      retryScheduleMs: [0, 2_000],
      timeoutMs: 3_000,
      allowPrivateTargets: false,
      resolve: resolveName,
      pollIntervalMs: 50,
    });
    await db.transaction((tx) =>
      settlementRepository.enqueue(tx, {
        operatorId: op.id,
        body: { bet_id: 'wb1', winner: 'NVDA', pct: 3.2, payout: 25, idempotency_key: settleIdempotencyKey('wb1') },
        now: clock.now(),
        firstDelayMs: 0,
      }),
    );
    try {
      await worker.runOnce();
    } finally {
      await worker.stop();
    }
    expect(lookups).toEqual([host]);
    expect(await settlementRepository.byBet(db, 'wb1')).toMatchObject({
      status: 'pending',
      attempts: 1,
      deliveredAt: null,
      lastStatusCode: null,
      lastError: `ENOTPUBLIC: refusing to connect: ${host} resolves to 127.0.0.1, not a public address`,
      nextAttemptAt: clock.now() + 2_000,
    });
    expect(reached).toEqual([]);
    expect(guard.stopped).toEqual([]);
  });
});
