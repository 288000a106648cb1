import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock/clock';
import { DEFAULT_OPERATOR_SETTINGS, type OperatorCredentials } from '../../src/operators/operator';
import type { Database } from '../../src/store/database';
import { settlementRepository } from '../../src/wallet/settlement-repository';
import { retrySettlement } from '../../src/wallet/settlement-service';
import { settleIdempotencyKey } from '../../src/wallet/settlements';
import { WalletSettlementWorker } from '../../src/wallet/wallet-worker';
import { freshDatabase, STORES } from '../support/harness';

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

describe.each(STORES)('odd wallet answers and settlement retries (%s)', (store) => {
  let db: Database;
  let dispose: () => Promise<void>;
  let clock: FakeClock;
  let server: Server;
  let received: Received[];
  let answer: (req: Received, res: ServerResponse) => void;
  let operators: Record<string, OperatorCredentials>;
  let worker: WalletSettlementWorker;
  let base: string;
  const schedule = [0, 1_000, 5_000];

  const operatorFor = (id: string, walletUrl: string | null): OperatorCredentials => ({
    id,
    name: id,
    apiKey: `pk_${id}`,
    walletUrl,
    settlesToWallet: true,
    status: 'active',
    mode: 'live',
    settings: DEFAULT_OPERATOR_SETTINGS,
    createdAt: 0,
    previousSecretExpiresAt: null,
    secrets: [`sk_${id}`],
  });

  beforeEach(async () => {
    clock = new FakeClock(1_800_000_000_000);
    const fresh = await freshDatabase(store);
    db = fresh.db;
    dispose = fresh.dispose;
    received = [];
    answer = (_req, res) => res.writeHead(200).end('{"ok":true}');
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const r = { path: req.url!, headers: req.headers, body };
        received.push(r);
        answer(r, res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    operators = {
      op_a: operatorFor('op_a', `${base}/a`),
      op_b: operatorFor('op_b', `${base}/b`),
    };
    worker = workerWithDeadline(400);
  });

  /** The settlement worker of these tests, its calls given `timeoutMs` to answer. */
  const workerWithDeadline = (timeoutMs: number) =>
    new WalletSettlementWorker({
      db,
      clock,
      logger: pino({ level: 'silent' }),
      credentialsOf: async (id) => operators[id]!,
      retryScheduleMs: schedule,
      timeoutMs,
      allowPrivateTargets: true,
      pollIntervalMs: 50,
    });

  afterEach(async () => {
    await worker.stop();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await dispose();
  });

  const enqueue = (betId: string, operatorId = 'op_a', payout = 12.5) =>
    db.transaction((tx) =>
      settlementRepository.enqueue(tx, {
        operatorId,
        body: { bet_id: betId, winner: 'NVDA', pct: 8.85, payout, idempotency_key: settleIdempotencyKey(betId) },
        now: clock.now(),
        firstDelayMs: schedule[0]!,
      }),
    );

  it('a 2xx whose body carries a NUL character is recorded as delivered', async () => {
    await enqueue('b_nul');
    answer = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok\u0000"}');
    await worker.runOnce();
    const s = await settlementRepository.byBet(db, 'b_nul');
    expect(s).toMatchObject({ status: 'delivered', attempts: 1, lastStatusCode: 200 });
    const log = await settlementRepository.attempts(db, 'b_nul');
    expect(log).toHaveLength(1);
    // Logged, with the NUL the store cannot hold replaced by U+FFFD.
    expect(log[0]!.response_excerpt).toBe('{"status":"ok\uFFFD"}');
  });

  it("one operator's wallet answering a NUL does not keep another operator's answer from being recorded", async () => {
    // Three answers released in one tick: the first is written alone, the other two in one batch.
    await enqueue('b_first', 'op_b');
    await enqueue('b_hostile', 'op_a');
    await enqueue('b_honest', 'op_b');
    const held: (() => void)[] = [];
    answer = (req, res) => {
      const bet = JSON.parse(req.body).bet_id as string;
      const send = () =>
        bet === 'b_hostile' ? res.writeHead(500).end('boom\u0000') : res.writeHead(200).end('{"status":"credited"}');
      held.push(send);
      if (held.length === 3) {
        const order = held.splice(0);
        setTimeout(() => {
          for (const f of order) f();
        }, 20);
      }
    };
    await worker.runOnce();
    expect(received).toHaveLength(3);
    expect(await settlementRepository.byBet(db, 'b_honest')).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(await settlementRepository.byBet(db, 'b_first')).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(await settlementRepository.byBet(db, 'b_hostile')).toMatchObject({
      status: 'pending',
      attempts: 1,
      lastStatusCode: 500,
    });
  });

  it('odd 2xx bodies (not JSON, empty, an array, an error object) acknowledge (docs/decisions.md)', async () => {
    const bodies = ['not json', '', '[]', '{"error":"INSUFFICIENT_FUNDS"}', '{"balance":"NaN","currency":"XXX"}'];
    for (const [i] of bodies.entries()) await enqueue(`b_odd_${i}`);
    answer = (req, res) => {
      const i = Number(JSON.parse(req.body).bet_id.split('_').pop());
      res.writeHead(200).end(bodies[i]);
    };
    await worker.runOnce();
    for (const [i] of bodies.entries()) {
      expect((await settlementRepository.byBet(db, `b_odd_${i}`))!.status).toBe('delivered');
    }
  });

  it('a redirect is not followed and leaves the settlement pending', async () => {
    await enqueue('b_redirect');
    answer = (req, res) => {
      if (req.path.startsWith('/a/')) res.writeHead(307, { location: `${base}/b/v1/bets/settle` }).end();
      else res.writeHead(200).end();
    };
    await worker.runOnce();
    expect(received.map((r) => r.path)).toEqual(['/a/v1/bets/settle']);
    expect(await settlementRepository.byBet(db, 'b_redirect')).toMatchObject({
      status: 'pending',
      lastStatusCode: 307,
    });
  });

  it('a 200 cut off mid-body, or dripped past the deadline, is not delivered', async () => {
    await enqueue('b_cut');
    await enqueue('b_drip');
    answer = (req, res) => {
      const bet = JSON.parse(req.body).bet_id as string;
      if (bet === 'b_cut') {
        res.writeHead(200, { 'content-length': '100' });
        res.write('{"status":');
        setTimeout(() => res.socket?.destroy(), 20);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 50);
        res.on('close', () => clearInterval(timer));
      }
    };
    await worker.runOnce();
    const cut = await settlementRepository.byBet(db, 'b_cut');
    const drip = await settlementRepository.byBet(db, 'b_drip');
    expect(cut).toMatchObject({ status: 'pending', lastStatusCode: null });
    expect(drip).toMatchObject({ status: 'pending', lastStatusCode: null });
    expect(drip!.lastError).toMatch(/outcome unknown/);
  });

  it('a "duplicate transaction" 409 stays pending and is retried with identical bytes', async () => {
    await enqueue('b_dup');
    answer = (_req, res) => res.writeHead(409).end('{"error":"DUPLICATE_TRANSACTION"}');
    await worker.runOnce();
    clock.advance(1_000);
    await worker.runOnce();
    clock.advance(5_000);
    await worker.runOnce();
    expect(await settlementRepository.byBet(db, 'b_dup')).toMatchObject({ status: 'pending', attempts: 3 });
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(new Set(received.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it('two concurrent re-sends of a confirmed settlement make one more call, same key and bytes', async () => {
    await enqueue('b1');
    await worker.runOnce();
    expect((await settlementRepository.byBet(db, 'b1'))!.status).toBe('delivered');
    const results = await Promise.allSettled([
      retrySettlement(db, clock, null, 'b1', { resendDelivered: true }),
      retrySettlement(db, clock, null, 'b1', { resendDelivered: true }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThanOrEqual(1);
    await worker.runOnce();
    expect(received).toHaveLength(2);
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(await settlementRepository.byBet(db, 'b1')).toMatchObject({ status: 'delivered', attempts: 2 });
  });

  it('a "Retry now" of a confirmed settlement (no --resend) is refused, another operator sees NOT_FOUND', async () => {
    await enqueue('b2');
    await worker.runOnce();
    await expect(retrySettlement(db, clock, 'op_a', 'b2')).rejects.toMatchObject({ code: 'ILLEGAL_TRANSITION' });
    await expect(retrySettlement(db, clock, 'op_b', 'b2')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(received).toHaveLength(1);
  });

  it('a "Retry now" while the attempt is in flight is not sent twice at once and keeps the key', async () => {
    // The held call must still be in flight after the retry's transaction, however loaded the machine.
    await worker.stop();
    worker = workerWithDeadline(10_000);
    await enqueue('b3');
    let release: (() => void) | null = null;
    answer = (_req, res) => {
      release = () => res.writeHead(500).end();
    };
    const pass = worker.runOnce();
    while (!release) await new Promise((r) => setTimeout(r, 10));
    clock.advance(10);
    await retrySettlement(db, clock, 'op_a', 'b3');
    // Still leased: nothing claims it a second time.
    expect(await settlementRepository.claimDue(db, clock.now(), 1_000, 10)).toEqual([]);
    answer = (_req, res) => res.writeHead(200).end();
    (release as unknown as () => void)();
    await pass;
    // The manual retry's time won over the backoff: the same pass sent it again, after the first answer.
    expect(received).toHaveLength(2);
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(await settlementRepository.byBet(db, 'b3')).toMatchObject({ status: 'delivered', attempts: 2 });
  });

  it('keeps retrying forever at the last interval; never dead-letters', async () => {
    await enqueue('b4');
    answer = (_req, res) => res.writeHead(503).end();
    for (let i = 0; i < 12; i++) {
      await worker.runOnce();
      clock.advance(5_000);
    }
    const s = await settlementRepository.byBet(db, 'b4');
    expect(s).toMatchObject({ status: 'pending', attempts: 12 });
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(new Set(received.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  // One operator's hanging wallet used to take every in-flight slot (WALLET_TIMEOUT_MS each), so
  // another operator's settlement due at the same time waited for whole rounds of timeouts.
  it("another operator's settlement is not held up behind a hanging wallet's backlog", async () => {
    for (let i = 0; i < 48; i++) await enqueue(`a_${String(i).padStart(2, '0')}`, 'op_a');
    clock.advance(1);
    await enqueue('z_honest', 'op_b');
    answer = (req, res) => {
      if (req.path.startsWith('/b/')) res.writeHead(200).end();
      // op_a's wallet never answers: each attempt waits the whole 400 ms deadline.
    };
    const t0 = Date.now();
    const pass = worker.runOnce();
    let deliveredAfter = Number.POSITIVE_INFINITY;
    while (Date.now() - t0 < 3_000) {
      if ((await settlementRepository.byBet(db, 'z_honest'))!.status === 'delivered') {
        deliveredAfter = Date.now() - t0;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    await pass;
    // Less than one of the hanging wallet's deadlines.
    expect(deliveredAfter).toBeLessThan(400);
  });
});
