import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import type { Database } from '../../src/store/database';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { settleIdempotencyKey } from '../../src/wallet/settlements';
import { WalletSettlementWorker } from '../../src/wallet/wallet-worker';
import { adminCli, initStore } from '../support/admin-cli';
import { freshDatabase } from '../support/harness';

/** The operator's wallet_url gets the webhook target policy: https, public addresses only. */
describe('SSRF: operator wallet_url in production', () => {
  describe('admin CLI (APP_ENV=production)', () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      APP_ENV: 'production',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'rbs-wallet-url-')),
      MASTER_KEY: randomBytes(32).toString('hex'),
      LOG_LEVEL: 'silent',
    };
    for (const name of ['WALLET_ALLOW_PRIVATE_TARGETS', 'WEBHOOK_ALLOW_PRIVATE_TARGETS', 'DATABASE_URL']) {
      delete env[name];
    }
    const admin = adminCli(env);
    beforeAll(() => initStore(env));
    const refusal = (message: string) => ({ code: 1, stdout: '', error: { error: 'INVALID_URL', message } });

    it('refuses plain http and the metadata address on create and on set-wallet, and stores nothing', async () => {
      const plain = await admin(
        'operator',
        'create',
        '--name',
        'Plain',
        '--wallet-url',
        'http://wallet.casino.example/api',
      );
      expect(plain).toEqual(refusal('wallet_url: the URL must use https'));
      const metadataUrl = 'https://169.254.169.254/latest/meta-data';
      const metadata = await admin('operator', 'create', '--name', 'Meta', '--wallet-url', metadataUrl);
      expect(metadata).toEqual(refusal('wallet_url: 169.254.169.254 is a loopback, private or link-local address'));
      const created = JSON.parse((await admin('operator', 'create', '--name', 'No wallet yet')).stdout);
      const setWallet = (url: string) => admin('operator', 'set-wallet', '--id', created.operator_id, '--url', url);
      expect(await setWallet('https://[::ffff:a9fe:a9fe]/')).toMatchObject({
        code: 1,
        error: { error: 'INVALID_URL' },
      });
      expect(await setWallet('http://127.0.0.1:8080/')).toEqual(refusal('wallet_url: the URL must use https'));
      const listed = JSON.parse((await admin('operator', 'list')).stdout);
      const rows = listed.operators.map((o: { name: string; wallet_url: string | null }) => [o.name, o.wallet_url]);
      expect(rows).toEqual([['No wallet yet', null]]);
    }, 120_000);
  });

  describe('OperatorService', () => {
    let db: Database;
    let dispose: () => Promise<void>;
    const answers: Record<string, string[]> = {
      'wallet.casino.example': ['93.184.216.34'],
      'metadata.casino.example': ['169.254.169.254'],
      'mixed.casino.example': ['93.184.216.34', 'fd00::5'],
    };
    const resolveName = async (host: string) => {
      const hit = answers[host];
      if (!hit) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      return hit;
    };
    const box = new SecretBox(randomBytes(32));
    const clock = new FakeClock(1_800_000_000_000);
    const strict = () => new OperatorService(db, box, clock, 0, { allowPrivateTargets: false, resolve: resolveName });

    beforeAll(async () => {
      ({ db, dispose } = await freshDatabase('sqlite'));
    });
    afterAll(async () => dispose());

    it('refuses http, private literals, names that resolve inward, credentials and queries', async () => {
      const operators = strict();
      const cases: [string, string][] = [
        ['http://wallet.casino.example/api', 'wallet_url: the URL must use https'],
        ['https://169.254.169.254/', 'wallet_url: 169.254.169.254 is a loopback, private or link-local address'],
        [
          'https://metadata.casino.example/',
          'wallet_url: metadata.casino.example resolves to 169.254.169.254, a loopback, private or link-local address',
        ],
        [
          'https://mixed.casino.example/',
          'wallet_url: mixed.casino.example resolves to fd00::5, a loopback, private or link-local address',
        ],
        ['https://localhost/', 'wallet_url: localhost is not a public host name'],
        ['https://user:pw@wallet.casino.example/', 'wallet_url: the URL must not carry a user name or password'],
        ['https://wallet.casino.example/api?x=1', 'wallet_url: must not carry a query string'],
        ['https://wallet.casino.example/api?', 'wallet_url: must not carry a query string'],
      ];
      for (const [url, message] of cases) {
        await expect(operators.create({ name: 'W', walletUrl: url }), url).rejects.toMatchObject({
          code: 'INVALID_URL',
          message,
        });
      }
      const op = await operators.create({ name: 'W', walletUrl: 'https://wallet.casino.example/api/' });
      expect(op.walletUrl).toBe('https://wallet.casino.example/api');
      for (const [url, message] of cases) {
        await expect(operators.setWalletUrl(op.id, url), url).rejects.toMatchObject({ code: 'INVALID_URL', message });
      }
      expect((await operators.get(op.id)).walletUrl).toBe('https://wallet.casino.example/api');
    });

    it('accepts a local wallet only with the explicit development setting', async () => {
      const dev = new OperatorService(db, box, clock, 0, { allowPrivateTargets: true });
      const local = await dev.create({ name: 'Local', walletUrl: 'http://127.0.0.1:8080/wallet' });
      expect(local.walletUrl).toBe('http://127.0.0.1:8080/wallet');
      const odd = dev.create({ name: 'Odd', walletUrl: 'ftp://127.0.0.1/' });
      await expect(odd).rejects.toMatchObject({ code: 'INVALID_URL' });
    });
  });

  describe('settle calls to a wallet_url stored before the policy', () => {
    let db: Database;
    let dispose: () => Promise<void>;
    let server: Server;
    let port = 0;
    let calls = 0;

    beforeAll(async () => {
      ({ db, dispose } = await freshDatabase('sqlite'));
      server = createServer((req, res) => {
        calls++;
        req.resume();
        req.on('end', () => res.writeHead(200).end('{"status":"credited"}'));
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as { port: number }).port;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await dispose();
    });

    it('are refused before any connection and stay pending', async () => {
      const clock = new FakeClock(1_800_000_000_000);
      const stored = { walletUrl: `http://127.0.0.1:${port}/wallet` };
      const worker = new WalletSettlementWorker({
        db,
        clock,
        logger: pino({ level: 'silent' }),
        credentialsOf: async () => ({
          id: 'op_1',
          name: 'Old',
          apiKey: 'pk_1',
          mode: 'live',
          walletUrl: stored.walletUrl,
          settlesToWallet: true,
          status: 'active',
          settings: {} as never,
          createdAt: 0,
          previousSecretExpiresAt: null,
          secrets: ['sk_1'],
        }),
        retryScheduleMs: [0, 1_000],
        timeoutMs: 2_000,
        allowPrivateTargets: false,
        pollIntervalMs: 50,
      });
      await db.transaction((tx) =>
        settlementRepository.enqueue(tx, {
          operatorId: 'op_1',
          body: { bet_id: 'b1', winner: 'NVDA', pct: 1.5, payout: 10, idempotency_key: settleIdempotencyKey('b1') },
          now: clock.now(),
          firstDelayMs: 0,
        }),
      );
      try {
        await worker.runOnce();
        expect(await settlementRepository.byBet(db, 'b1')).toMatchObject({
          status: 'pending',
          attempts: 1,
          deliveredAt: null,
          lastError: 'refused: the target URL is not https',
        });
        stored.walletUrl = `https://[::ffff:127.0.0.1]:${port}/wallet`;
        clock.advance(1_000);
        await worker.runOnce();
        expect(await settlementRepository.byBet(db, 'b1')).toMatchObject({
          status: 'pending',
          attempts: 2,
          lastError: 'refused: ::ffff:7f00:1 is not a public address',
        });
        expect(calls).toBe(0);
      } finally {
        await worker.stop();
      }
    });
  });
});
