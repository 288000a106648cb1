import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock/clock';
import { OperatorModes } from '../../src/operators/operator-mode';
import { OperatorService } from '../../src/operators/operators';
import { SecretBox } from '../../src/operators/secret-box';
import type { Database } from '../../src/store/database';
import { PostgresDatabase } from '../../src/store/postgres';
import { recordEvents } from '../../src/webhooks/events';
import { WebhookService } from '../../src/webhooks/service';
import { eventually, freshDatabase, STORES, testConfig } from '../support/harness';
import { betSettled } from '../support/webhook-events';
import { TestReceiver } from '../support/webhook-receiver';

/** Two workers (on PostgreSQL: two connection pools, as two processes would have) share one outbox. */
describe.each(STORES)('concurrent dispatchers on %s', (store) => {
  const modes = new OperatorModes();
  const receiver = new TestReceiver();
  let base = '';
  let db: Database;
  let second: Database;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    base = await receiver.start();
    const fresh = await freshDatabase(store);
    db = fresh.db;
    dispose = fresh.dispose;
    second = fresh.schema ? new PostgresDatabase({ connectionString: fresh.url!, schema: fresh.schema }) : db;
  });
  afterAll(async () => {
    if (second !== db) await second.close();
    await dispose?.();
    await receiver.close();
  });

  it('sends each attempt exactly once', async () => {
    const config = testConfig({ WEBHOOK_RETRY_SCHEDULE_MS: '0,50,100,150,200', OUTBOX_POLL_MS: '10' });
    const box = new SecretBox(randomBytes(32));
    const logger = pino({ level: 'silent' });
    const make = (d: Database) =>
      new WebhookService({
        db: d,
        box,
        clock: systemClock,
        logger,
        operators: new OperatorService(d, box, systemClock, 0),
        config,
      });
    const [w1, w2] = [make(db), make(second)];
    const op = await new OperatorService(db, box, systemClock, 0).create({ name: 'two workers' });
    await w1.createEndpoint(op.id, { url: `${base}/two`, events: ['bet.settled'] });
    // Every third delivery fails once, so retries are contended too.
    receiver.behaviour = (req) => {
      const seenBefore =
        receiver.received.filter((r) => r.headers['x-delivery-id'] === req.headers['x-delivery-id']).length > 1;
      return Number(String(req.headers['x-delivery-id']).charCodeAt(5)) % 3 === 0 && !seenBefore
        ? { status: 500 }
        : { status: 200 };
    };
    const n = 600;
    const now = Date.now();
    await db.transaction((tx) =>
      recordEvents(
        tx,
        modes,
        Array.from({ length: n }, (_, i) => betSettled(op.id, { id: `bet_${i}` })),
        now,
      ),
    );
    await Promise.all([w1.dispatcher.start(), w2.dispatcher.start()]);
    try {
      await eventually(async () => {
        const row = await db.get<{ n: number }>(
          `SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'`,
        );
        return Number(row?.n) === n;
      }, 30_000);
    } finally {
      await Promise.all([w1.dispatcher.stop(), w2.dispatcher.stop()]);
    }
    const sends = receiver.on('/two').map((r) => `${r.headers['x-delivery-id']}#${r.headers['x-delivery-attempt']}`);
    expect(new Set(sends).size).toBe(sends.length);
    const ids = new Set(receiver.on('/two').map((r) => r.headers['x-delivery-id']));
    expect(ids.size).toBe(n);
    const attempts = await db.all<{ delivery_id: string; attempt: number }>(
      'SELECT delivery_id, attempt FROM webhook_attempts',
    );
    expect(attempts).toHaveLength(sends.length);
  });
});
