import pino from 'pino';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/clock';
import type { OperatorCredentials } from '../operators/operator';
import { DEFAULT_OPERATOR_SETTINGS } from '../operators/operator';
import { verifyRequest } from '../signing/request-signature';
import { migrate } from '../store/migrate';
import { SqliteDatabase } from '../store/sqlite';
import { settlementRepository } from './settlement-repository';
import { retryDelayMs, settleIdempotencyKey } from './settlements';
import { settleUrl, WalletSettlementWorker } from './wallet-worker';

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

describe('WalletSettlementWorker', () => {
  let db: SqliteDatabase;
  let clock: FakeClock;
  let server: Server;
  let received: Received[];
  let answer: (res: ServerResponse) => void;
  let operator: OperatorCredentials;
  let worker: WalletSettlementWorker;
  const schedule = [0, 1_000, 5_000];

  beforeEach(async () => {
    clock = new FakeClock(1_800_000_000_000);
    db = new SqliteDatabase({ filename: ':memory:' });
    await migrate(db);
    received = [];
    answer = (res) => res.writeHead(200).end('{"ok":true}');
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ path: req.url!, headers: req.headers, body });
        answer(res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    operator = {
      id: 'op_1',
      name: 'W',
      apiKey: 'pk_test',
      walletUrl: `http://127.0.0.1:${port}/wallet`,
      settlesToWallet: true,
      status: 'active',
      mode: 'live',
      settings: DEFAULT_OPERATOR_SETTINGS,
      createdAt: 0,
      previousSecretExpiresAt: null,
      secrets: ['sk_current', 'sk_previous'],
    };
    worker = new WalletSettlementWorker({
      db,
      clock,
      logger: pino({ level: 'silent' }),
      credentialsOf: async () => operator,
      retryScheduleMs: schedule,
      timeoutMs: 300,
      // The test wallet listens on loopback over plain http.
      allowPrivateTargets: true,
      pollIntervalMs: 50,
    });
  });
  afterEach(async () => {
    await worker.stop();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await db.close();
  });

  const enqueue = (betId: string, payout = 12.5) =>
    db.transaction((tx) =>
      settlementRepository.enqueue(tx, {
        operatorId: 'op_1',
        body: { bet_id: betId, winner: 'NVDA', pct: 8.85, payout, idempotency_key: settleIdempotencyKey(betId) },
        now: clock.now(),
        firstDelayMs: schedule[0]!,
      }),
    );

  it('POSTs the stored body to {wallet_url}/v1/bets/settle, signed with the current secret', async () => {
    await enqueue('b1');
    expect(await worker.runOnce()).toBe(1);
    expect(received).toHaveLength(1);
    const r = received[0]!;
    expect(r.path).toBe('/wallet/v1/bets/settle');
    expect(JSON.parse(r.body)).toEqual({
      bet_id: 'b1',
      winner: 'NVDA',
      pct: 8.85,
      payout: 12.5,
      idempotency_key: 'settle_b1',
    });
    expect(r.headers['x-operator-key']).toBe('pk_test');
    expect(r.headers['x-timestamp']).toBe(String(clock.now()));
    const check = verifyRequest({
      secrets: ['sk_current'],
      method: 'POST',
      path: r.path,
      timestamp: r.headers['x-timestamp'] as string,
      signature: r.headers['x-signature'] as string,
      body: r.body,
      now: clock.now(),
    });
    expect(check).toEqual({ ok: true, secretIndex: 0 });
    const s = await settlementRepository.byBet(db, 'b1');
    expect(s).toMatchObject({
      status: 'delivered',
      attempts: 1,
      lastStatusCode: 200,
      deliveredAt: clock.now(),
      claimedUntil: null,
    });
    expect(await worker.runOnce()).toBe(0);
  });

  it('retries a 5xx, a 4xx and a timeout with the same key and body, then forever at the last interval', async () => {
    await enqueue('b2');
    const statuses = [503, 400];
    answer = (res) => {
      const status = statuses.shift();
      if (status) res.writeHead(status).end('x'.repeat(2_000));
      // Otherwise never answer: the worker's timeout decides.
    };
    await worker.runOnce();
    expect(await settlementRepository.byBet(db, 'b2')).toMatchObject({
      status: 'pending',
      attempts: 1,
      lastStatusCode: 503,
      nextAttemptAt: clock.now() + 1_000,
    });
    expect(await worker.runOnce()).toBe(0);
    clock.advance(1_000);
    await worker.runOnce();
    expect(await settlementRepository.byBet(db, 'b2')).toMatchObject({
      attempts: 2,
      lastStatusCode: 400,
      nextAttemptAt: clock.now() + 5_000,
    });
    clock.advance(5_000);
    await worker.runOnce();
    const afterTimeout = await settlementRepository.byBet(db, 'b2');
    expect(afterTimeout).toMatchObject({
      status: 'pending',
      attempts: 3,
      lastStatusCode: null,
      nextAttemptAt: clock.now() + 5_000,
    });
    expect(afterTimeout!.lastError).toBe('no answer within 300 ms (outcome unknown)');

    answer = (res) => res.writeHead(204).end();
    clock.advance(5_000);
    await worker.runOnce();
    expect(await settlementRepository.byBet(db, 'b2')).toMatchObject({
      status: 'delivered',
      attempts: 4,
      lastStatusCode: 204,
    });
    expect(new Set(received.map((r) => r.body)).size).toBe(1);

    const log = await settlementRepository.attempts(db, 'b2');
    expect(log.map((a) => [a.attempt, a.status_code])).toEqual([
      [1, 503],
      [2, 400],
      [3, null],
      [4, 204],
    ]);
    expect(log[0]!.response_excerpt).toHaveLength(501);
    expect(log[2]!.latency_ms).toBeGreaterThanOrEqual(250);
  });

  it('records a refused connection as not delivered, and a missing wallet_url without calling anyone', async () => {
    await enqueue('b3');
    operator = { ...operator, walletUrl: 'http://127.0.0.1:9/wallet' };
    await worker.runOnce();
    const s = await settlementRepository.byBet(db, 'b3');
    expect(s).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null });
    expect(s!.lastError).toMatch(/ECONNREFUSED/);
    operator = { ...operator, walletUrl: null };
    clock.advance(1_000);
    await worker.runOnce();
    expect((await settlementRepository.byBet(db, 'b3'))!.lastError).toBe('the operator has no wallet_url configured');
    expect(received).toHaveLength(0);
  });

  it('leases a claim: a claimed row is not handed out again until its lease runs out', async () => {
    await enqueue('b4');
    const first = await settlementRepository.claimDue(db, clock.now(), 2_000, 10);
    expect(first.map((s) => s.betId)).toEqual(['b4']);
    expect(await settlementRepository.claimDue(db, clock.now() + 1_999, 2_000, 10)).toEqual([]);
    // The claimant died: after the lease another pass takes it.
    const again = await settlementRepository.claimDue(db, clock.now() + 2_000, 2_000, 10);
    expect(again.map((s) => s.betId)).toEqual(['b4']);
  });

  it('makes a settlement due at once on a manual retry, and re-sends a delivered one with the same key', async () => {
    await enqueue('b5');
    answer = (res) => res.writeHead(500).end();
    await worker.runOnce();
    await settlementRepository.retryNow(db, 'b5', clock.now());
    answer = (res) => res.writeHead(200).end();
    expect(await worker.runOnce()).toBe(1);
    expect((await settlementRepository.byBet(db, 'b5'))!.status).toBe('delivered');
    await settlementRepository.retryNow(db, 'b5', clock.now());
    await worker.runOnce();
    expect(received.map((r) => JSON.parse(r.body).idempotency_key)).toEqual(['settle_b5', 'settle_b5', 'settle_b5']);
  });

  it('runs on its own once started', async () => {
    await enqueue('b6');
    worker.start();
    clock.advance(0);
    await new Promise((r) => setTimeout(r, 200));
    expect((await settlementRepository.byBet(db, 'b6'))!.status).toBe('delivered');
  });

  it('retryDelayMs repeats the last interval', () => {
    expect([0, 1, 2, 3, 50].map((a) => retryDelayMs(schedule, a))).toEqual([0, 1_000, 5_000, 5_000, 5_000]);
    expect(retryDelayMs([], 3)).toBe(0);
  });
});

describe('settleUrl', () => {
  it('appends the settle path to the URL path, also for a row stored with a bare "?" before it was refused', () => {
    expect(settleUrl('https://wallet.example/api')).toBe('https://wallet.example/api/v1/bets/settle');
    expect(settleUrl('https://wallet.example/api/')).toBe('https://wallet.example/api/v1/bets/settle');
    expect(settleUrl('https://wallet.example')).toBe('https://wallet.example/v1/bets/settle');
    // Text concatenation made this https://wallet.example/api?/v1/bets/settle: the path in the query.
    expect(settleUrl('https://wallet.example/api?')).toBe('https://wallet.example/api/v1/bets/settle');
  });
});
