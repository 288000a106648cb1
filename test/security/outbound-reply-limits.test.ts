import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { DEFAULT_OPERATOR_SETTINGS, type OperatorCredentials } from '../../src/operators/operator';
import type { Database } from '../../src/store/database';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { settleIdempotencyKey } from '../../src/wallet/settlements';
import { WalletSettlementWorker } from '../../src/wallet/wallet-worker';
import { WebhookSender } from '../../src/webhooks/sender';
import { eventually, freshDatabase } from '../support/harness';

const HUGE = 200 * 1024 * 1024;
const CAP = 64 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'x');

/**
 * A hostile far end: answers 200 and streams `total` bytes as fast as the client takes them,
 * stopping when the client hangs up. `sent` counts what the socket accepted: with a bounded reader
 * it stays near the cap plus the kernel's socket buffers, far from `total`.
 */
type Sent = { bytes: number; closed: boolean };
function flood(res: ServerResponse, total: number, sent: Sent, declareLength: boolean): void {
  const length = declareLength ? { 'content-length': String(total) } : {};
  res.writeHead(200, { 'content-type': 'application/json', ...length });
  res.on('close', () => (sent.closed = true));
  const pump = () => {
    while (sent.bytes < total && !res.destroyed) {
      sent.bytes += CHUNK.length;
      if (!res.write(CHUNK)) return void res.once('drain', pump);
    }
    if (!res.destroyed) res.end();
  };
  pump();
}

/** Heap plus buffers: what a reader that keeps the whole reply would grow by. */
const memoryInUse = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

describe('outbound replies are capped in size and time', () => {
  let server: Server;
  let port = 0;
  let handler: (req: IncomingMessage, res: ServerResponse) => void;
  let requests: string[];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        requests.push(body);
        handler(req, res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    requests = [];
  });

  describe('wallet settle calls', () => {
    let db: Database;
    let dispose: () => Promise<void>;
    let clock: FakeClock;
    let worker: WalletSettlementWorker;
    const schedule = [0, 2_000, 10_000];

    beforeEach(async () => {
      ({ db, dispose } = await freshDatabase('sqlite'));
      clock = new FakeClock(1_800_000_000_000);
      const operator: OperatorCredentials = {
        id: 'op_1',
        name: 'Hostile wallet',
        apiKey: 'pk_1',
        mode: 'live',
        walletUrl: `http://127.0.0.1:${port}/wallet`,
        settlesToWallet: true,
        status: 'active',
        settings: DEFAULT_OPERATOR_SETTINGS,
        createdAt: 0,
        previousSecretExpiresAt: null,
        secrets: ['sk_1'],
      };
      worker = new WalletSettlementWorker({
        db,
        clock,
        logger: pino({ level: 'silent' }),
        credentialsOf: async () => operator,
        retryScheduleMs: schedule,
        timeoutMs: 1_500,
        // The wallet here is a loopback server; the caps hold whatever the address policy.
        allowPrivateTargets: true,
        maxResponseBytes: CAP,
        pollIntervalMs: 50,
      });
      await db.transaction((tx) =>
        settlementRepository.enqueue(tx, {
          operatorId: 'op_1',
          body: { bet_id: 'b1', winner: 'NVDA', pct: 8.85, payout: 19, idempotency_key: settleIdempotencyKey('b1') },
          now: clock.now(),
          firstDelayMs: 0,
        }),
      );
    });
    afterEach(async () => {
      await worker.stop();
      await dispose();
    });

    it.each([
      ['streamed without a length', false],
      ['with a declared Content-Length', true],
    ])('a 200 MB 2xx reply %s is a failed attempt, retried on schedule, no confirmation', async (_, declareLength) => {
      const sent = { bytes: 0, closed: false };
      handler = (_req, res) => flood(res, HUGE, sent, declareLength);
      const before = memoryInUse();

      await worker.runOnce();

      const s = await settlementRepository.byBet(db, 'b1');
      expect(s).toMatchObject({ status: 'pending', attempts: 1, deliveredAt: null, lastStatusCode: 200 });
      expect(s!.nextAttemptAt).toBe(clock.now() + 2_000);
      const declared = declareLength ? ` (Content-Length ${HUGE})` : '';
      expect(s!.lastError).toBe(
        `the reply is larger than 65536 bytes${declared} (HTTP 200): not taken as a confirmation`,
      );
      // The worker hung up long before the 200 MB: what left the server is bounded by the cap plus socket buffers.
      await eventually(async () => sent.closed, 5_000);
      expect(sent.bytes).toBeLessThan(32 * 1024 * 1024);
      expect(memoryInUse() - before).toBeLessThan(48 * 1024 * 1024);

      // Not due again before the schedule says so; then the same body is sent again, and a sane answer confirms it.
      expect(await worker.runOnce()).toBe(0);
      handler = (_req, res) => res.writeHead(200).end('{"status":"credited"}');
      clock.advance(2_000);
      await worker.runOnce();
      const settled = await settlementRepository.byBet(db, 'b1');
      expect(settled).toMatchObject({ status: 'delivered', attempts: 2, lastStatusCode: 200 });
      expect(requests).toHaveLength(2);
      expect(requests[1]).toBe(requests[0]);
      const log = await settlementRepository.attempts(db, 'b1');
      expect(log.map((a) => [a.attempt, a.status_code, a.response_excerpt])).toEqual([
        [1, 200, null],
        [2, 200, '{"status":"credited"}'],
      ]);
    });

    it('a reply dripped a byte at a time is cut at the deadline: outcome unknown, retried, not settled', async () => {
      let drip: NodeJS.Timeout | undefined;
      handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write(' ')), 100);
      };
      const started = performance.now();
      await worker.runOnce();
      clearInterval(drip);
      const elapsed = performance.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(1_400);
      // Generous: the machine is shared, but a missing deadline would hang here for minutes.
      expect(elapsed).toBeLessThan(10_000);
      expect(await settlementRepository.byBet(db, 'b1')).toMatchObject({
        status: 'pending',
        attempts: 1,
        deliveredAt: null,
        lastStatusCode: null,
        lastError: 'no answer within 1500 ms (outcome unknown)',
        nextAttemptAt: clock.now() + 2_000,
      });
    });
  });

  describe('webhook deliveries', () => {
    const material = () => ({
      surface: 'A' as const,
      url: `http://127.0.0.1:${port}/hook`,
      endpointSecrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      operatorKey: null,
      operatorSecret: null,
    });
    const delivery = { deliveryId: 'dlv_1', eventId: 'evt_1', eventType: 'bet.settled', attempt: 1, body: '{}' };

    it('a 200 MB 2xx answer fails the attempt, with the size in the log', async () => {
      const sender = new WebhookSender({ timeoutMs: 5_000, allowPrivateTargets: true, maxResponseBytes: CAP });
      const sent = { bytes: 0, closed: false };
      handler = (_req, res) => flood(res, HUGE, sent, false);
      const before = memoryInUse();
      try {
        const result = await sender.send(material(), delivery, Date.now());
        expect(result).toMatchObject({ ok: false, statusCode: 200, responseExcerpt: null });
        expect(result.error).toBe('the reply is larger than 65536 bytes (HTTP 200)');
        expect(sent.bytes).toBeLessThan(32 * 1024 * 1024);
        expect(memoryInUse() - before).toBeLessThan(48 * 1024 * 1024);
      } finally {
        await sender.close();
      }
    });

    it('an answer dripped slowly fails at the deadline', async () => {
      const sender = new WebhookSender({ timeoutMs: 1_000, allowPrivateTargets: true, maxResponseBytes: CAP });
      let drip: NodeJS.Timeout | undefined;
      handler = (_req, res) => {
        res.writeHead(200);
        drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write('.')), 100);
      };
      try {
        const result = await sender.send(material(), delivery, Date.now());
        expect(result).toMatchObject({ ok: false, statusCode: null });
        expect(result.error).toBe('timeout: no complete answer within 1000 ms');
      } finally {
        clearInterval(drip);
        await sender.close();
      }
    });
  });
});
