/**
 * The cash-out storm at its --quick size, on both stores, as a correctness check: every acknowledged
 * cash-out stored once at the payout it answered (floor of stake x multiplier, at or under the crash
 * point), every other bet lost at the crash, one bet.settled event per bet, and the minimal
 * reference took every cash-out too. No speed is asserted: the host is shared.
 */
import { describe, expect, it } from 'vitest';
import { cashoutStorm } from '../../bench/scenarios/cashout-storm';
import { PG_URL } from '../support/harness';

describe('bench scenario: cash-out storm (--quick)', () => {
  for (const pgUrl of [null, PG_URL]) {
    it(`nothing lost, nothing twice, money exact (${pgUrl ? 'PostgreSQL' : 'SQLite'})`, async () => {
      const report = await cashoutStorm({ pgUrl, quick: true, log: () => {} });
      expect(report.checks.length).toBe(4);
      expect(report.checks.filter((c) => !c.ok)).toEqual([]);
      const text = report.lines.join('\n');
      // A host too busy to send them all before the crash sees the late ones refused (409), which the checks
      // above hold to: refused bets lost at the crash, nothing paid twice.
      expect(text).toMatch(/service: \d+ of 1000 cash-outs .* \d+ cash-outs\/s, p50 \d+ ms, p99 \d+ ms/);
      expect(text).toMatch(/ticks during the storm, largest gap \d+ ms/);
      expect(text).toMatch(/service \/ minimal: \d+\.\d% of the minimal server's cash-out rate/);
    }, 900_000);
  }
});
