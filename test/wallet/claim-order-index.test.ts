import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate';
import { SqliteDatabase } from '../../src/store/sqlite';

describe('the wallet outbox claim on SQLite', () => {
  it('reads due settlements in claim order from an index, without sorting every due row', async () => {
    const db = new SqliteDatabase({ filename: ':memory:' });
    await migrate(db);
    // The claim's shape (settlement-repository.ts): due rows in (next_attempt_at, bet_id) order, up to a limit.
    const plan = await db.all<{ detail: string }>(
      `EXPLAIN QUERY PLAN SELECT * FROM wallet_settlements
       WHERE status = 'pending' AND next_attempt_at <= 1 AND (claimed_until IS NULL OR claimed_until <= 1)
       ORDER BY next_attempt_at, bet_id LIMIT 16`,
    );
    const steps = plan.map((p) => p.detail);
    expect(steps.some((d) => d.includes('USING INDEX wallet_settlements_claim_order'))).toBe(true);
    expect(steps.filter((d) => d.includes('TEMP B-TREE'))).toEqual([]);
    await db.close();
  });
});
