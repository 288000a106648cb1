/**
 * The big-round scenario at its --quick size, on both stores, as a correctness check of the service
 * under a burst: every acknowledged bet stored once, every bet settled as its target and the crash
 * point say with the exact payout, one bet.settled event per bet, every reserve stored once. No
 * figure is asserted: the host is shared and its speed drifts.
 */
import { describe, expect, it } from 'vitest';
import { bigRound } from '../../bench/scenarios/big-round';
import { PG_URL } from '../support/harness';

describe('bench scenario: round-start burst and big round (--quick)', () => {
  for (const pgUrl of [null, PG_URL]) {
    it(`nothing lost, nothing twice, money exact (${pgUrl ? 'PostgreSQL' : 'SQLite'})`, async () => {
      const report = await bigRound({ pgUrl, quick: true, log: () => {} });
      expect(report.checks.map((c) => c.name)).toEqual([
        'Crash bets: every acknowledged bet stored once, nothing else',
        'Crash settlement: each bet paid stake x target when target <= crash, else lost',
        'Crash events: one bet.settled per bet',
        'Stock Race reserves: every acknowledged reserve stored once, nothing else, stakes exact',
      ]);
      expect(report.checks.filter((c) => !c.ok)).toEqual([]);
      // The figures the operator reads were all measured.
      const text = report.lines.join('\n');
      expect(text).toMatch(/Crash: \d+ of 1000 bets accepted .* \d+ bets\/s, p50 \d+ ms, p99 \d+ ms/);
      expect(text).toMatch(/largest gap between ticks \d+ ms/);
      expect(text).toMatch(/crash -> every bet settled and every event written -?\d+ ms; bare writes of the same rows/);
      expect(text).toMatch(/Stock Race: 1000 of 1000 reserves accepted/);
    }, 900_000);
  }
});
