import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperatorModes } from '../../src/operators/operator-mode';
import type { OperatorService } from '../../src/operators/operators';
import type { Database } from '../../src/store/database';
import { recordEvents } from '../../src/webhooks/events';
import type { WebhookService } from '../../src/webhooks/service';
import { betSettled } from '../support/webhook-events';
import { webhooksOnSqlite } from '../support/webhook-service';

describe('paging the delivery log', () => {
  let db: Database;
  let dispose: () => Promise<void>;
  let w: WebhookService;
  let ops: OperatorService;
  beforeAll(async () => {
    let fresh: { dispose: () => Promise<void> };
    ({ fresh, db, ops, w } = await webhooksOnSqlite());
    dispose = fresh.dispose;
  });
  afterAll(async () => dispose?.());

  /**
   * `before` is a bare millisecond, exclusive; one round fans its events out with one created_at, so
   * paging by it alone left every delivery after the first page that shared the last row's
   * millisecond unreachable. `starting_after` (the last delivery_id of a page) carries the tie-breaker.
   */
  it('pages through every delivery of one round (they share created_at) with starting_after', async () => {
    const op = await ops.create({ name: 'paging' });
    await w.createEndpoint(op.id, { url: 'http://127.0.0.1:9/x', events: ['bet.settled'] });
    const n = 120;
    await db.transaction((tx) =>
      recordEvents(
        tx,
        new OperatorModes(),
        Array.from({ length: n }, (_, i) => betSettled(op.id, { id: `bet_${i}` })),
        Date.now(),
      ),
    );
    const seen: string[] = [];
    let startingAfter: string | undefined;
    const pages: number[] = [];
    for (let page = 0; page < 10; page++) {
      const rows = await w.listDeliveries(op.id, { limit: 50, startingAfter });
      if (rows.length === 0) break;
      pages.push(rows.length);
      for (const r of rows) seen.push(r.delivery_id);
      startingAfter = rows[rows.length - 1]!.delivery_id;
    }
    expect(pages).toEqual([50, 50, 20]);
    expect(new Set(seen).size).toBe(n);
    // Another operator's delivery id is no cursor: a clear 400, nothing listed.
    const other = await ops.create({ name: 'other' });
    await expect(w.listDeliveries(other.id, { startingAfter: seen[0] })).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
      message: `starting_after: no delivery ${seen[0]} of this operator (give the last delivery_id of a page)`,
    });
  });
});
