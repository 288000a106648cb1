import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOST_ATTEMPT, type AttemptResult } from '../../src/outbox/engine';
import type { Database } from '../../src/store/database';
import { PostgresDatabase } from '../../src/store/postgres';
import { settlementRepository, WalletSettlementOutbox } from '../../src/wallet/settlement-repository';
import { settleIdempotencyKey } from '../../src/wallet/settlements';
import { WebhookDeliveryOutbox } from '../../src/webhooks/delivery-repository';
import { freshDatabase, STORES } from '../support/harness';

/** No attempt in flight on this worker, and room for every row: what a claim alone sees. */
const NO_LIMIT = { inFlightByTarget: new Map<string, number>(), perTargetLimit: 1_000 };

const failed = (startedAt: number): AttemptResult => ({
  ok: false,
  statusCode: 503,
  startedAt,
  latencyMs: 3,
  error: 'wallet answered 503',
  responseExcerpt: null,
  retryAfterMs: null,
});

/** The wallet outbox's repository under the shared engine's contract, on each store. */
describe.each(STORES)('wallet settlement outbox repository on %s', (store) => {
  let db: Database;
  let dispose: () => Promise<void>;
  let url: string | null;
  let schema: string | undefined;
  const T0 = 1_800_000_000_000;
  const LEASE = 2_000;
  const INF = Number.POSITIVE_INFINITY;

  beforeAll(async () => {
    const fresh = await freshDatabase(store);
    ({ db, dispose, url, schema } = fresh);
  });
  afterAll(async () => dispose?.());

  const enqueue = (betId: string, operatorId = 'op_1') =>
    db.transaction((tx) =>
      settlementRepository.enqueue(tx, {
        operatorId,
        body: { bet_id: betId, winner: null, pct: null, payout: 10, idempotency_key: settleIdempotencyKey(betId) },
        now: T0,
        firstDelayMs: 0,
      }),
    );

  it('fixes the attempt at claim, logs a lease run out as a lost attempt, ignores its late answer', async () => {
    const outbox = new WalletSettlementOutbox(db);
    await enqueue('lost1');
    const [first] = await outbox.claim({
      now: T0,
      leaseUntil: T0 + LEASE,
      leaseMs: LEASE,
      limit: 10,
      maxAttempts: INF,
      ...NO_LIMIT,
    });
    expect(first).toMatchObject({ id: 'lost1', attempt: 1, leaseUntil: T0 + LEASE });
    // `attempts` counts recorded attempts (as the API shows them): none yet while the first is in flight.
    expect(await settlementRepository.byBet(db, 'lost1')).toMatchObject({ attempts: 0, claimedUntil: T0 + LEASE });
    expect(
      await outbox.claim({
        now: T0 + LEASE - 1,
        leaseUntil: T0 + 2 * LEASE,
        leaseMs: LEASE,
        limit: 10,
        maxAttempts: INF,
        ...NO_LIMIT,
      }),
    ).toEqual([]);

    // The first worker is presumed dead: another claims after the lease and makes attempt 2.
    const t1 = T0 + LEASE;
    const [second] = await outbox.claim({
      now: t1,
      leaseUntil: t1 + LEASE,
      leaseMs: LEASE,
      limit: 10,
      maxAttempts: INF,
      ...NO_LIMIT,
    });
    expect(second).toMatchObject({ id: 'lost1', attempt: 2 });
    // The first worker's answer arrives after all: its lease is gone, so it changes nothing.
    await outbox.record([{ kind: 'retry', claim: first!, result: failed(T0), at: T0 + 99 }], t1);
    await outbox.record([{ kind: 'retry', claim: second!, result: failed(t1), at: t1 + 1_000 }], t1);
    expect(await settlementRepository.byBet(db, 'lost1')).toMatchObject({
      status: 'pending',
      attempts: 2,
      claimedUntil: null,
      nextAttemptAt: t1 + 1_000,
      lastStatusCode: 503,
    });
    const log = await settlementRepository.attempts(db, 'lost1');
    expect(log.map((a) => [a.attempt, a.status_code, a.error, a.started_at])).toEqual([
      [1, null, LOST_ATTEMPT, T0],
      [2, 503, 'wallet answered 503', t1],
    ]);
  });

  it('honours a manual retry made while an attempt was in flight', async () => {
    const outbox = new WalletSettlementOutbox(db);
    await enqueue('manual1');
    const [claim] = await outbox.claim({
      now: T0,
      leaseUntil: T0 + LEASE,
      leaseMs: LEASE,
      limit: 10,
      maxAttempts: INF,
      ...NO_LIMIT,
    });
    await settlementRepository.retryNow(db, 'manual1', T0 + 5);
    await outbox.record([{ kind: 'retry', claim: claim!, result: failed(T0), at: T0 + 60_000 }], T0 + 10);
    expect(await settlementRepository.byBet(db, 'manual1')).toMatchObject({
      nextAttemptAt: T0 + 5,
      claimedUntil: null,
    });
  });

  it('releases open leases (what a SQLite process does at start)', async () => {
    const outbox = new WalletSettlementOutbox(db);
    await enqueue('release1');
    await outbox.claim({ now: T0, leaseUntil: T0 + 60_000, leaseMs: 60_000, limit: 10, maxAttempts: INF, ...NO_LIMIT });
    await outbox.releaseLeases(T0 + 1);
    const [again] = await outbox.claim({
      now: T0 + 1,
      leaseUntil: T0 + 1 + LEASE,
      leaseMs: LEASE,
      limit: 10,
      maxAttempts: INF,
      ...NO_LIMIT,
    });
    expect(again).toMatchObject({ id: 'release1', attempt: 2 });
  });

  it("keeps each operator's wallet within its share of the calls in flight, leaving the rest unclaimed", async () => {
    const outbox = new WalletSettlementOutbox(db);
    const now = T0 + 100 * LEASE;
    for (let i = 0; i < 4; i++) await enqueue(`share_a${i}`, 'op_hangs');
    await enqueue('share_b0', 'op_fine');
    const q = { now, leaseUntil: now + LEASE, leaseMs: LEASE, limit: 10, maxAttempts: INF, perTargetLimit: 2 };
    // op_hangs already has one call in flight on this worker: one more of its rows fits, op_fine's row too.
    // (Rows of the tests above are due too; only this test's rows are looked at.)
    const mine = (claims: { id: string; target: string }[]) => claims.filter((c) => c.id.startsWith('share_'));
    const first = mine(await outbox.claim({ ...q, inFlightByTarget: new Map([['op_hangs', 1]]) }));
    expect(first.map((c) => [c.id, c.target])).toEqual([
      ['share_a0', 'op_hangs'],
      ['share_b0', 'op_fine'],
    ]);
    // At its limit, op_hangs is left out of the query: nothing of it is claimed, and its rows are untouched.
    expect(mine(await outbox.claim({ ...q, inFlightByTarget: new Map([['op_hangs', 2]]) }))).toEqual([]);
    expect(await settlementRepository.byBet(db, 'share_a1')).toMatchObject({ attempts: 0, claimedUntil: null });
    const later = mine(await outbox.claim({ ...q, inFlightByTarget: new Map() }));
    expect(later.map((c) => c.id)).toEqual(['share_a1', 'share_a2']);
  });

  it.runIf(store === 'postgres')('hands disjoint rows to two workers claiming at once', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `pair${i}`);
    for (const id of ids) await enqueue(id);
    const other = new PostgresDatabase({ connectionString: url!, schema: schema! });
    try {
      const now = T0 + 10 * LEASE;
      const q = { now, leaseUntil: now + LEASE, leaseMs: LEASE, limit: 25, maxAttempts: INF, ...NO_LIMIT };
      const [a, b] = await Promise.all([
        new WalletSettlementOutbox(db).claim(q),
        new WalletSettlementOutbox(other).claim(q),
      ]);
      const mine = [...a, ...b].map((c) => c.id).filter((id) => id.startsWith('pair'));
      expect(new Set(mine).size).toBe(mine.length);
      expect(mine.length).toBe(ids.length);
    } finally {
      await other.close();
    }
  });
});

/** The webhook outbox's repository under the same contract: the lost attempt, and the dead letter at claim. */
describe.each(STORES)('webhook delivery outbox repository on %s', (store) => {
  let db: Database;
  let dispose: () => Promise<void>;
  const T0 = 1_800_000_000_000;
  const LEASE = 2_000;

  beforeAll(async () => {
    ({ db, dispose } = await freshDatabase(store));
    await db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO events (id, seq, operator_id, type, created_at, data)
         VALUES ('evt_1', 1, 'op_1', 'bet.settled', ?, '{}')`,
        [T0],
      );
      await tx.run(
        `INSERT INTO webhook_deliveries
           (id, event_id, endpoint_id, operator_id, status, attempts, next_attempt_at, created_at)
         VALUES ('dlv_1', 'evt_1', 'we_1', 'op_1', 'pending', 0, ?, ?)`,
        [T0, T0],
      );
    });
  });
  afterAll(async () => dispose?.());

  const claim = (outbox: WebhookDeliveryOutbox, now: number, maxAttempts: number) =>
    outbox.claim({ now, leaseUntil: now + LEASE, leaseMs: LEASE, limit: 10, maxAttempts, ...NO_LIMIT });
  const delivery = () =>
    db.get<{ status: string; attempts: number; last_error: string | null }>(
      `SELECT status, attempts, last_error FROM webhook_deliveries WHERE id = 'dlv_1'`,
    );

  it('carries the event, logs an unanswered lease as lost, dead-letters at claim once attempts are spent', async () => {
    const outbox = new WebhookDeliveryOutbox(db);
    const [first] = await claim(outbox, T0, 2);
    expect(first).toMatchObject({
      id: 'dlv_1',
      attempt: 1,
      eventId: 'evt_1',
      endpointId: 'we_1',
      event: { type: 'bet.settled' },
    });
    expect(await claim(outbox, T0 + LEASE - 1, 2)).toEqual([]);
    const [second] = await claim(outbox, T0 + LEASE, 2);
    expect(second).toMatchObject({ attempt: 2 });
    // The last attempt's worker dies too: the next claim logs it and dead-letters without a send.
    expect(await claim(outbox, T0 + 2 * LEASE, 2)).toEqual([]);
    expect(await delivery()).toMatchObject({ status: 'dead', last_error: LOST_ATTEMPT });
    const log = await db.all<{ attempt: number; error: string }>(
      `SELECT attempt, error FROM webhook_attempts WHERE delivery_id = 'dlv_1' ORDER BY attempt`,
    );
    expect(log.map((a) => [Number(a.attempt), a.error])).toEqual([
      [1, LOST_ATTEMPT],
      [2, LOST_ATTEMPT],
    ]);
  });
});
